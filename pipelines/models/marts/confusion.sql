-- Confusion matrix cells (outcome x proposal) of labelled decisions, per model identity and '*'.
with cube as (
    select * from int_cube_scoped
),

final as (
    select decision_type, week_start, week, model_key, outcome, proposal, sum(n)::bigint as decisions
    from cube
    group by all
)

select * from final

-- The risk-coverage curve: for each global confidence threshold on the grid (where the accepted set
-- changes), the share of labelled decisions accepted and the error rate among them. Over the decisions
-- whose probabilities are the model's: `one_hot` ones are left out.
with cube as (
    select * from int_cube_scoped
),

params as (
    select grid from run_params
),

counts as (
    select decision_type, week_start, week, model_key, grid_index, sum(n) as n, sum(correct) as correct
    from cube
    where not one_hot  -- one-hot confidences are always 1
    group by all
),

cumulative as (
    select
        *,
        (sum(n) over from_top)::bigint as accepted,
        (sum(correct) over from_top)::bigint as accepted_correct,
        (sum(n) over whole)::bigint as labelled
    from counts
    window
        from_top as (partition by decision_type, week_start, model_key order by grid_index desc
                     rows between unbounded preceding and current row),
        whole as (partition by decision_type, week_start, model_key)
),

final as (
    select
        cumulative.decision_type, cumulative.week_start, cumulative.week, cumulative.model_key,
        cumulative.grid_index / params.grid as threshold,
        accepted, accepted_correct,
        accepted / labelled as coverage,
        1 - accepted_correct / accepted as selective_risk
    from cumulative, params
)

select * from final

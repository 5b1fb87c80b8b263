-- The labelled part of `int_cube` per model identity and summed over all models ('*'), without the
-- fleet keys: the input of the agreement, calibration-score and threshold marts.
with labelled as (
    select * from int_cube where labelled
),

per_model as (
    select
        decision_type, week_start, week, model_key, proposal, outcome, outcome_in_options, one_hot, grid_index,
        max(n_options) as n_options, sum(n)::bigint as n, sum(correct)::bigint as correct,
        sum(sum_confidence) as sum_confidence, sum(sum_brier) as sum_brier, sum(sum_log_loss) as sum_log_loss
    from labelled
    group by all
),

final as (
    select * from per_model
    union all
    select
        decision_type, week_start, week, '*', proposal, outcome, outcome_in_options, one_hot, grid_index,
        max(n_options), sum(n)::bigint, sum(correct)::bigint,
        sum(sum_confidence), sum(sum_brier), sum(sum_log_loss)
    from per_model
    group by all
)

select * from final

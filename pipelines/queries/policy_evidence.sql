-- The per-option thresholds a policy takes from one run's `thresholds` mart: every option of the policy's
-- decision type, week and model key, with its grid index (null: never accepted, the abstain action) and
-- the evidence behind it. Parameters: $decision_type, $week, $model_key.
with chosen as (
    select * from thresholds
    where decision_type = $decision_type and week = $week and model_key = $model_key
),

final as (
    select
        option_id, grid_index, threshold, accepted, accepted_correct, precision, precision_lower, coverage,
        labelled, precision_target, alpha_per_option
    from chosen
    order by option_id
)

select * from final

-- Labelled decisions (per model identity and again under '*') with their top-label equal-mass bin: the bins of sklearn's
-- calibration_curve(strategy="quantile"), i.e. edges at the linear-interpolated quantiles k/B of the
-- confidences and bin = number of inner edges strictly below the confidence. With r = the 0-based
-- rank of the first tie and n rows, that count is floor((r * B - 1) / (n - 1)), in exact integers.
with labelled as (
    select decision_type, week_start, week, model_key, confidence, correct, block
    from int_decisions
    where labelled
),

scoped as (
    select * from labelled
    union all
    select * replace ('*' as model_key) from labelled
),

params as (
    select ece_bins from run_params
),

ranked as (
    select
        decision_type, week_start, week, model_key, confidence, correct, block,
        rank() over by_confidence - 1 as first_rank,
        count(*) over by_group as n
    from scoped
    window
        by_group as (partition by decision_type, week_start, model_key),
        by_confidence as (partition by decision_type, week_start, model_key order by confidence)
),

final as (
    select
        ranked.* exclude (first_rank, n),
        case
            when ranked.n <= 1 then 0
            else least(params.ece_bins - 1, (ranked.first_rank * params.ece_bins - 1) // (ranked.n - 1))
        end as bin
    from ranked, params
)

select * from final

-- Reliability-diagram rows: per equal-mass bin, the confidence range, mean confidence, agreement with
-- production's outcome and count.
with binned as (
    select * from int_calibration_binned
),

final as (
    select
        decision_type, week_start, week, model_key, bin,
        min(confidence_min) as confidence_min,
        max(confidence_max) as confidence_max,
        sum(sum_confidence) / sum(decisions) as mean_confidence,
        sum(correct) / sum(decisions) as agreement,
        sum(decisions)::bigint as decisions,
        sum(sum_confidence) as sum_confidence,
        sum(correct)::bigint as correct
    from binned
    group by all
)

select * from final

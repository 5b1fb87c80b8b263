-- Reliability-diagram rows: per equal-mass bin, the confidence range, mean confidence, accuracy and count.
with binned as (
    select * from int_calibration_binned
),

final as (
    select
        decision_type, week_start, week, model_key, bin,
        min(confidence) as confidence_min,
        max(confidence) as confidence_max,
        avg(confidence) as mean_confidence,
        avg(correct::int) as accuracy,
        count(*) as decisions,
        sum(confidence) as sum_confidence,
        sum(correct::int) as correct
    from binned
    group by all
)

select * from final

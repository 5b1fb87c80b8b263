-- Exact p50/p95/p99 of scorer and end-to-end time (quantile_cont: linear interpolation, numpy's default)
-- and throughput per decision type, week, backend, device and instance type (CPU and GPU side by side).
with scored as (
    select * from int_decisions where is_scored
),

hourly as (
    select decision_type, week_start, backend, device, instance_type, count(*) as n
    from scored
    group by decision_type, week_start, backend, device, instance_type, date_trunc('hour', received_at)
),

peaks as (
    select decision_type, week_start, backend, device, instance_type, max(n) as peak_per_hour
    from hourly
    group by all
),

quantiles as (
    select
        decision_type, week_start, week, backend, device, instance_type,
        count(*) as decisions,
        quantile_cont(scorer_ms, [0.5, 0.95, 0.99]) as scorer,
        quantile_cont(total_ms, [0.5, 0.95, 0.99]) as total
    from scored
    group by all
),

final as (
    select
        decision_type, week_start, week, backend, device, instance_type, decisions,
        scorer[1] as scorer_p50_ms, scorer[2] as scorer_p95_ms, scorer[3] as scorer_p99_ms,
        total[1] as total_p50_ms, total[2] as total_p95_ms, total[3] as total_p99_ms,
        decisions / (7 * 24) as decisions_per_hour,
        peaks.peak_per_hour
    from quantiles
    join peaks using (decision_type, week_start, backend, device, instance_type)
)

select * from final

-- Exact p50/p95/p99 of scorer and end-to-end time (quantile_cont: linear interpolation, numpy's default)
-- and throughput per decision type, week, backend, device and instance type (CPU and GPU side by side).
with scored as (
    select decisions.week_start, segments.fleet_scope, decisions.received_at, decisions.scorer_ms, decisions.total_ms
    from int_decisions as decisions
    join int_segments as segments using (segment)
    where decisions.is_scored
),

fleets as (
    select distinct fleet_scope, decision_type, backend, device, instance_type from int_segments
),

hourly as (
    select fleet_scope, week_start, count(*) as n
    from scored
    group by fleet_scope, week_start, epoch_us(received_at) // 3600000000
),

peaks as (
    select fleet_scope, week_start, max(n) as peak_per_hour
    from hourly
    group by all
),

quantiles as (
    select
        fleet_scope, week_start,
        count(*) as decisions,
        quantile_cont(scorer_ms, [0.5, 0.95, 0.99]) as scorer,
        quantile_cont(total_ms, [0.5, 0.95, 0.99]) as total
    from scored
    group by all
),

final as (
    select
        fleets.decision_type, quantiles.week_start, strftime(quantiles.week_start, '%G-W%V') as week,
        fleets.backend, fleets.device, fleets.instance_type, quantiles.decisions,
        scorer[1] as scorer_p50_ms, scorer[2] as scorer_p95_ms, scorer[3] as scorer_p99_ms,
        total[1] as total_p50_ms, total[2] as total_p95_ms, total[3] as total_p99_ms,
        quantiles.decisions / (7 * 24) as decisions_per_hour,
        peaks.peak_per_hour
    from quantiles
    join peaks using (fleet_scope, week_start)
    join fleets using (fleet_scope)
)

select * from final

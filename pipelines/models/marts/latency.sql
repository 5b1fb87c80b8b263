-- Exact p50/p95/p99 of scorer and end-to-end time (quantile_cont: linear interpolation, numpy's default)
-- and throughput per decision type, week, backend, device and instance type (CPU and GPU side by side).
-- Every scored decision's times from `int_decisions` (latency needs no outcome: the left join keeps the
-- unlabelled ones), its fleet from `int_segments`. The busiest hour comes from `int_segment_hours`.
with scored as (
    select segments.decision_type, decisions.week_start, segments.backend, segments.device,
        segments.instance_type, decisions.scorer_ms, decisions.total_ms
    from int_decisions as decisions
    join int_segments as segments using (segment)
    where segments.is_scored
),

hourly as (
    select
        decision_type, week_start, backend, device, instance_type, hour,
        sum(offered) as n
    from int_segment_hours
    where status = 'scored'
    group by all
),

peaks as (
    select decision_type, week_start, backend, device, instance_type, max(n)::bigint as peak_per_hour
    from hourly
    group by all
),

quantiles as (
    select
        decision_type, week_start, backend, device, instance_type,
        count(*) as decisions,
        quantile_cont(scorer_ms, [0.5, 0.95, 0.99]) as scorer,
        quantile_cont(total_ms, [0.5, 0.95, 0.99]) as total
    from scored
    group by all
),

final as (
    select
        quantiles.decision_type, quantiles.week_start, strftime(quantiles.week_start, '%G-W%V') as week,
        quantiles.backend, quantiles.device, quantiles.instance_type, quantiles.decisions,
        scorer[1] as scorer_p50_ms, scorer[2] as scorer_p95_ms, scorer[3] as scorer_p99_ms,
        total[1] as total_p50_ms, total[2] as total_p95_ms, total[3] as total_p99_ms,
        quantiles.decisions / (7 * 24) as decisions_per_hour,
        peaks.peak_per_hour
    from quantiles
    join peaks
        on peaks.decision_type = quantiles.decision_type and peaks.week_start = quantiles.week_start
        and peaks.backend is not distinct from quantiles.backend and peaks.device is not distinct from quantiles.device
        and peaks.instance_type is not distinct from quantiles.instance_type
)

select * from final

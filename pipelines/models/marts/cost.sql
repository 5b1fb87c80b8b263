-- Cost per accepted decision and per correct accepted decision, per decision type, week, backend, device
-- and instance type: the segment-weeks' cost (`int_segment_week_cost`: instance-hours x the dated hourly
-- price, or prompt tokens x the per-million-token prices) summed. Correct accepted = accepted x precision
-- of the accepted labelled decisions (unlabelled ones are not known to be correct).
with decisions as (
    select * from int_accepted
),

params as (
    select utilization from run_params
),

counted as (
    select
        decision_type, week_start, week, backend, device, instance_type, model_name,
        sum(n)::bigint as scored,
        coalesce(sum(n) filter (where accepted), 0)::bigint as accepted,
        coalesce(sum(n) filter (where accepted and labelled), 0)::bigint as accepted_labelled,
        coalesce(sum(correct) filter (where accepted and labelled), 0)::bigint as accepted_correct
    from decisions
    group by all
),

spent as (
    select
        segments.decision_type, cost.week_start, segments.backend, segments.device, segments.instance_type,
        segments.model_name,
        sum(cost.sum_scorer_ms) / 3600000.0 as busy_hours,
        sum(cost.uncached_tokens)::bigint as uncached_tokens,
        sum(cost.cached_tokens)::bigint as cached_tokens,
        max(cost.usd_per_hour) as usd_per_hour,
        max(cost.price_date) as price_date,
        sum(cost.cost_usd) as cost_usd
    from int_segment_week_cost as cost
    join int_segments as segments using (segment)
    group by all
),

priced as (
    select
        counted.*,
        spent.busy_hours,
        spent.uncached_tokens,
        coalesce(spent.cached_tokens, 0)::bigint as cached_tokens,
        params.utilization,
        spent.busy_hours / params.utilization as instance_hours,
        spent.usd_per_hour,
        spent.price_date,
        spent.cost_usd
    from counted
    cross join params
    left join spent
        on spent.decision_type = counted.decision_type and spent.week_start = counted.week_start
        and spent.backend is not distinct from counted.backend and spent.device is not distinct from counted.device
        and spent.instance_type is not distinct from counted.instance_type
        and spent.model_name is not distinct from counted.model_name
),

costed as (
    select
        *,
        accepted * accepted_correct / nullif(accepted_labelled, 0) as correct_accepted_estimate
    from priced
),

final as (
    select
        decision_type, week_start, week, backend, device, instance_type, model_name,
        scored, accepted, accepted_labelled, accepted_correct, correct_accepted_estimate,
        busy_hours, utilization, instance_hours, usd_per_hour, uncached_tokens, cached_tokens, price_date,
        cost_usd,
        cost_usd / nullif(accepted, 0) as cost_per_accepted,
        cost_usd / nullif(correct_accepted_estimate, 0) as cost_per_correct_accepted
    from costed
)

select * from final

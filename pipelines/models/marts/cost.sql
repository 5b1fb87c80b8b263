-- Cost per accepted decision and per correct accepted decision, per decision type, week, backend, device
-- and instance type. Instance-priced backends: instance-hours = busy hours (sum of scorer time) divided by
-- the assumed `utilization`, times the dated hourly price. Token-priced backends: uncached and cached prompt
-- tokens times the per-million-token prices. Correct accepted = accepted x precision of the accepted
-- labelled decisions (unlabelled ones are not known to be correct).
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

usage as (
    select
        counted.*,
        spent.sum_scorer_ms / 3600000.0 as busy_hours,
        (spent.prompt_tokens - coalesce(spent.cached_tokens, 0))::bigint as uncached_tokens,
        coalesce(spent.cached_tokens, 0)::bigint as cached_tokens
    from counted
    left join int_usage as spent
        on spent.decision_type = counted.decision_type and spent.week_start = counted.week_start
        and spent.backend is not distinct from counted.backend and spent.device is not distinct from counted.device
        and spent.instance_type is not distinct from counted.instance_type
        and spent.model_name is not distinct from counted.model_name
),

priced as (
    select
        usage.*,
        params.utilization,
        usage.busy_hours / params.utilization as instance_hours,
        instances.usd_per_hour,
        tokens.usd_per_mtok_input,
        tokens.usd_per_mtok_cached,
        coalesce(instances.price_date, tokens.price_date) as price_date
    from usage
    cross join params
    left join cfg_instance_prices as instances on instances.instance_type = usage.instance_type
    left join cfg_token_prices as tokens on tokens.model_name = usage.model_name and usage.instance_type is null
),

costed as (
    select
        *,
        coalesce(instance_hours * usd_per_hour,
                 (uncached_tokens * usd_per_mtok_input + cached_tokens * usd_per_mtok_cached) / 1e6) as cost_usd,
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

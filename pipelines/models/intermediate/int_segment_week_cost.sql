-- What scoring cost per scored segment and ISO week: the one place a segment-week is priced, read by
-- the `cost` and `paired` marts and by `queries/policy_replay.sql`. Instance-priced backends: busy hours
-- (sum of scorer time) divided by the assumed `utilization`, times the dated hourly price. Token-priced
-- backends (no instance type): uncached and cached prompt tokens times the per-million-token prices.
with weeks as (
    select * from int_segment_weeks
),

segments as (
    select segment, instance_type, model_name from int_segments where is_scored
),

params as (
    select utilization from run_params
),

priced as (
    select
        weeks.segment, weeks.week_start, weeks.offered, weeks.sum_scorer_ms,
        weeks.sum_scorer_ms / 3600000.0 as busy_hours,
        (weeks.prompt_tokens - coalesce(weeks.cached_tokens, 0))::bigint as uncached_tokens,
        coalesce(weeks.cached_tokens, 0)::bigint as cached_tokens,
        params.utilization,
        instances.usd_per_hour,
        tokens.usd_per_mtok_input,
        tokens.usd_per_mtok_cached,
        coalesce(instances.price_date, tokens.price_date) as price_date
    from weeks
    join segments using (segment)
    cross join params
    left join cfg_instance_prices as instances on instances.instance_type = segments.instance_type
    left join cfg_token_prices as tokens
        on tokens.model_name = segments.model_name and segments.instance_type is null
),

final as (
    select
        *,
        coalesce(busy_hours / utilization * usd_per_hour,
                 (uncached_tokens * usd_per_mtok_input + cached_tokens * usd_per_mtok_cached) / 1e6) as cost_usd
    from priced
)

select * from final

-- The offered decisions counted per segment and ISO week (Monday, UTC), with their scorer time and prompt
-- tokens, summed from `int_segment_hours`. Busy time and tokens (of the scored segments) feed `int_usage`.
with hours as (
    select * from int_segment_hours
),

final as (
    select
        segment, decision_type, status, reason, model_name, model_sha256, quantization, backend, device,
        instance_type,
        date_trunc('week', make_timestamp(hour * 3600000000))::date as week_start,  -- UTC, without ICU
        any_value(option_ids) as option_ids,
        sum(offered)::bigint as offered,
        sum(sum_scorer_ms) as sum_scorer_ms,
        sum(prompt_tokens) as prompt_tokens,
        sum(cached_tokens) as cached_tokens
    from hours
    group by all
)

select * from final

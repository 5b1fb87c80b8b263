-- The offered decisions counted per segment and ISO week (Monday, UTC), with their scorer time and prompt
-- tokens, summed from `int_segment_hours`. The segments' strings are in `int_segments`; busy time and
-- tokens of the scored segments are priced in `int_segment_week_cost`.
with hours as (
    select * from int_segment_hours
),

final as (
    select
        segment,
        week_start,
        sum(offered)::bigint as offered,
        sum(sum_scorer_ms) as sum_scorer_ms,
        sum(prompt_tokens) as prompt_tokens,
        sum(cached_tokens) as cached_tokens
    from hours
    group by all
)

select * from final

-- Busy scorer time and prompt tokens of scored decisions per decision type, week, fleet and model name:
-- the cost mart's usage, summed from `int_segment_weeks` (no outcome needed, so not carried per decision).
with scored as (
    select * from int_segment_weeks where status = 'scored'
),

final as (
    select
        decision_type, week_start, backend, device, instance_type, model_name,
        sum(offered) as scored,
        sum(sum_scorer_ms) as sum_scorer_ms,
        sum(prompt_tokens) as prompt_tokens,
        sum(cached_tokens) as cached_tokens
    from scored
    group by all
)

select * from final

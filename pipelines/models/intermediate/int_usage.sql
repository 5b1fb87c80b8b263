-- Busy scorer time and prompt tokens of scored decisions per decision type, week, fleet and model name:
-- the cost mart's usage, summed from `int_segment_weeks` (no outcome needed, so not carried per decision)
-- and named from `int_segments`.
with weeks as (
    select * from int_segment_weeks
),

final as (
    select
        segments.decision_type, weeks.week_start, segments.backend, segments.device, segments.instance_type,
        segments.model_name,
        sum(weeks.offered) as scored,
        sum(weeks.sum_scorer_ms) as sum_scorer_ms,
        sum(weeks.prompt_tokens) as prompt_tokens,
        sum(weeks.cached_tokens) as cached_tokens
    from weeks
    join int_segments as segments using (segment)
    where segments.is_scored
    group by all
)

select * from final

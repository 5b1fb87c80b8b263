-- Scored decisions counted by every key an additive metric needs: model and fleet, proposal, outcome,
-- confidence grid cell and whether the decision is labelled. Confusion, Brier, log-loss, thresholds,
-- risk-coverage, selective and cost marts all sum over this small table instead of the decisions.
with scored as (
    select * from int_decisions where is_scored
),

params as (
    select grid from run_params
),

final as (
    select
        scored.decision_type, scored.week_start, scored.week, scored.model_key, scored.model_name,
        scored.backend, scored.device, scored.instance_type,
        scored.proposal, scored.outcome, scored.labelled, scored.outcome_in_options,
        floor(scored.confidence * params.grid)::int as grid_index,
        max(scored.n_options) as n_options,
        count(*) as n,
        count(*) filter (where scored.correct) as correct,
        sum(scored.confidence) as sum_confidence,
        sum(scored.brier) as sum_brier,
        sum(scored.log_loss) as sum_log_loss,
        sum(scored.scorer_ms) as sum_scorer_ms,
        sum(scored.prompt_tokens) as prompt_tokens,
        sum(scored.cached_tokens) as cached_tokens
    from scored, params
    group by all
)

select * from final

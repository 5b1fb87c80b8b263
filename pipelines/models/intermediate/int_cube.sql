-- Scored decisions counted by every key an additive metric needs: model and fleet, proposal, outcome,
-- confidence grid cell, whether the decision is labelled and whether its probabilities are `one_hot`
-- (no Brier or log-loss then; the calibration and threshold marts leave those cells out). Confusion, Brier, log-loss, thresholds,
-- risk-coverage, selective and cost marts all sum over this small table instead of the decisions
-- (scorer time, tokens and their cost: `int_segment_week_cost`).
-- Counted per segment first (integer keys), then named from `int_segments`.
with scored as (
    select * from int_decisions where is_scored
),

params as (
    select grid from run_params
),

per_segment as (
    select
        scored.segment, scored.week_start, scored.proposal_pos, scored.proposal_other,
        scored.outcome_pos, scored.outcome_other, scored.labelled, scored.one_hot,
        floor(scored.confidence * params.grid)::int as grid_index,
        count(*) as n,
        count(*) filter (where scored.correct) as correct,
        sum(scored.confidence) as sum_confidence,
        -- multiclass Brier: sum over options of (p - [option = outcome])^2 = sum p^2 - 2 p_outcome + 1
        sum(list_dot_product(scored.probabilities, scored.probabilities)
            - 2 * scored.probabilities[scored.outcome_pos] + 1) as sum_brier,
        sum(-ln(greatest(scored.probabilities[scored.outcome_pos], 1e-15))) as sum_log_loss
    from scored, params
    group by all
),

final as (
    select
        segments.decision_type, cells.week_start, strftime(cells.week_start, '%G-W%V') as week,
        segments.model_key, segments.model_name, segments.backend, segments.device, segments.instance_type,
        coalesce(segments.option_ids[cells.proposal_pos], cells.proposal_other) as proposal,
        coalesce(segments.option_ids[cells.outcome_pos], cells.outcome_other) as outcome,
        cells.labelled, cells.one_hot, cells.outcome_pos is not null as outcome_in_options, cells.grid_index,
        max(segments.n_options)::bigint as n_options,
        sum(cells.n)::bigint as n,
        sum(cells.correct)::bigint as correct,
        sum(cells.sum_confidence) as sum_confidence,
        sum(cells.sum_brier) as sum_brier,
        sum(cells.sum_log_loss) as sum_log_loss
    from per_segment as cells
    join int_segments as segments using (segment)
    group by all
)

select * from final

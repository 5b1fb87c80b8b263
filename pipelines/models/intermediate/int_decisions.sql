-- Proposals joined with their outcomes: one narrow row per decision with the per-decision scalars every
-- mart needs. Strings live in `int_segments` (the row keeps its segment hash, and the proposal and outcome
-- as positions in the segment's options; an id outside them is kept as text); the probability vector is
-- kept only for labelled decisions whose outcome is an option and that are not `one_hot` (Brier, log-loss,
-- classwise calibration; one-hot rows say nothing about calibration and every calibration metric skips them),
-- the decision id (and stored state) only where a severe error is possible; `decision_key` (the id's 64-bit hash)
-- pairs the rows of several candidates on one decision (`paired`). The time, scorer and end-to-end
-- milliseconds and prompt tokens of every decision are kept for `int_segment_hours` and `latency` (the
-- runner drops them after `latency`), and the microseconds from receipt to the decision's first outcome
-- report and that report's source for `label_delay` (dropped after it). Materialized once, one decision
-- type at a time: the one full scan of the proposals' Parquet (the only pass that decodes their strings and
-- option lists) and its join.
with proposals as (
    select * from stg_proposals
),

outcomes as (
    select decision_id, outcome, first_at, first_source from stg_outcomes
),

params as (
    select bootstrap_blocks, severe_confidence from run_params
),

joined as (
    select
        proposals.*,
        outcomes.outcome,
        outcomes.outcome is not null as joined,
        outcomes.first_at,
        outcomes.first_source,
        list_position(proposals.option_ids, outcomes.outcome) as outcome_pos,
        list_position(proposals.option_ids, proposals.proposal) as proposal_pos
    from proposals
    left join outcomes using (decision_id)
),

final as (
    select
        hash(decision_type, status, reason, candidate, model_identity_sha256, normalization, model_name,
             model_sha256, quantization, backend, device, instance_type, option_ids) as segment,
        week_start,
        sampled,
        status = 'scored' as is_scored,
        joined,
        status = 'scored' and joined as labelled,
        outcome_pos::utinyint as outcome_pos,
        case when outcome_pos is null then outcome end as outcome_other,
        proposal_pos::utinyint as proposal_pos,
        case when proposal_pos is null then proposal end as proposal_other,
        confidence,
        one_hot,
        proposal = outcome as correct,
        case when status = 'scored' and joined and outcome_pos is not null and not one_hot
             then probabilities end as probabilities,
        -- UBIGINT on both sides: hash() % an INTEGER is computed in HUGEINT, far slower at this size
        hash(decision_id) as decision_key,
        (hash(decision_id) % params.bootstrap_blocks::ubigint)::usmallint as block,
        case when status = 'scored' and joined and proposal <> outcome and confidence >= params.severe_confidence
             then decision_id end as decision_id,
        -- the stored (already redacted) state of the same decisions only, for the `gallery` mart
        case when status = 'scored' and joined and proposal <> outcome and confidence >= params.severe_confidence
             then state end as state,
        received_at,
        scorer_ms,
        total_ms,
        prompt_tokens,
        cached_tokens,
        epoch_us(first_at) - epoch_us(received_at) as outcome_delay_us,
        first_source as outcome_source
    from joined, params
)

select * from final

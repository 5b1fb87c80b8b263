-- Proposals joined with their outcomes, with the per-decision scalars every mart needs.
-- Materialized once so the raw Parquet is scanned once.
with proposals as (
    select * from stg_proposals
),

outcomes as (
    select * from stg_outcomes
),

joined as (
    select
        proposals.*,
        outcomes.outcome,
        outcomes.outcome is not null as joined,
        list_position(proposals.option_ids, outcomes.outcome) as outcome_pos
    from proposals
    left join outcomes using (decision_id)
),

final as (
    select
        decision_id,
        decision_type,
        week_start,
        week,
        received_at,
        sampled,
        status,
        reason,
        status = 'scored' as is_scored,
        joined,
        status = 'scored' and joined as labelled,
        outcome,
        outcome_pos is not null as outcome_in_options,
        proposal,
        confidence,
        proposal = outcome as correct,
        len(option_ids) as n_options,
        -- the vectors are kept only where classwise calibration needs them
        case when status = 'scored' and joined and outcome_pos is not null then option_ids end as option_ids,
        case when status = 'scored' and joined and outcome_pos is not null then probabilities end as probabilities,
        probabilities[outcome_pos] as p_outcome,
        list_sum(list_transform(probabilities, lambda x: x * x)) - 2 * probabilities[outcome_pos] + 1 as brier,
        -ln(greatest(probabilities[outcome_pos], 1e-15)) as log_loss,
        model_key,
        hash(decision_id) % params.bootstrap_blocks as block,
        backend,
        device,
        instance_type,
        model_name,
        scorer_ms,
        total_ms,
        prompt_tokens,
        cached_tokens
    from joined, (select bootstrap_blocks from run_params) as params
)

select * from final

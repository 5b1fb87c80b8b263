-- The labelled decisions whose proposal differs from production's outcome at `severe_confidence` or above
-- (the ones `int_decisions` keeps the id and stored state of), named: decision type, model key, proposal
-- and outcome as option ids, and whether the proposal is an option the catalog marks high-consequence
-- (`severe`). Read once from `int_decisions` for `severe_errors` and `gallery`.
with decisions as (
    select
        decisions.decision_id, segments.decision_type, decisions.week_start, segments.model_key,
        coalesce(segments.option_ids[decisions.proposal_pos], decisions.proposal_other) as proposal,
        coalesce(segments.option_ids[decisions.outcome_pos], decisions.outcome_other) as outcome,
        decisions.confidence, decisions.received_at, decisions.state
    from int_decisions as decisions
    join int_segments as segments using (segment)
    where decisions.decision_id is not null
),

catalog as (
    select distinct decision_type, option_id from cfg_high_consequence
),

final as (
    select decisions.*, catalog.option_id is not null as severe
    from decisions
    left join catalog
        on catalog.decision_type = decisions.decision_type and catalog.option_id = decisions.proposal
)

select * from final

-- Confident wrong proposals on options the catalog marks high-consequence, one row per decision.
-- `int_decisions` keeps the decision id exactly for labelled, wrong proposals at `severe_confidence` or above.
with labelled as (
    select
        decisions.decision_id, segments.decision_type, decisions.week_start, segments.model_key,
        coalesce(segments.option_ids[decisions.proposal_pos], decisions.proposal_other) as proposal,
        decisions.confidence,
        coalesce(segments.option_ids[decisions.outcome_pos], decisions.outcome_other) as outcome,
        decisions.received_at
    from int_decisions as decisions
    join int_segments as segments using (segment)
    where decisions.decision_id is not null
),

params as (
    select severe_confidence from run_params
),

catalog as (
    select decision_type, option_id from cfg_high_consequence
),

final as (
    select
        labelled.decision_id, labelled.decision_type, labelled.week_start,
        strftime(labelled.week_start, '%G-W%V') as week, labelled.model_key,
        labelled.proposal, labelled.confidence, labelled.outcome, labelled.received_at
    from labelled
    cross join params
    join catalog
        on catalog.decision_type = labelled.decision_type
        and catalog.option_id = labelled.proposal
    where labelled.confidence >= params.severe_confidence
)

select * from final

-- Confident wrong proposals on options the catalog marks high-consequence, one row per decision.
-- `int_decisions` keeps the decision id exactly for labelled, wrong proposals at `severe_confidence` or above
-- (`int_flagged`, named).
with labelled as (
    select decision_id, decision_type, week_start, model_key, proposal, confidence, outcome, received_at
    from int_flagged
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

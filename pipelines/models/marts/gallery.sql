-- The disagreement gallery: per decision type, week and model key, the labelled decisions whose proposal
-- differs from production's outcome at `severe_confidence` or above (the ones `int_decisions` keeps the id
-- of): the 25 most confident severe errors (a high-consequence option proposed) and the 25 most confident
-- other disagreements, numbered by `rank` (severe first, then by confidence). `state` is the decision's state as the sidecar stored it: redacted as the catalog
-- says before it was persisted (removed fields absent, hashed ones `hmac-sha256:<hex>`), null where the
-- decision type does not store states.
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

flagged as (
    select decisions.*, catalog.option_id is not null as severe
    from decisions
    left join catalog
        on catalog.decision_type = decisions.decision_type and catalog.option_id = decisions.proposal
),

kept as (  -- the most confident of each kind
    select *
    from (
        select
            flagged.*,
            row_number() over (
                partition by decision_type, week_start, model_key, severe order by confidence desc, decision_id
            ) as position
        from flagged
    ) as numbered
    where position <= 25
),

ranked as (
    select
        kept.*,
        row_number() over (
            partition by decision_type, week_start, model_key order by severe desc, confidence desc, decision_id
        ) as place
    from kept
),

final as (
    select
        decision_type, week_start, strftime(week_start, '%G-W%V') as week, model_key,
        place::integer as rank, decision_id, proposal, outcome, confidence, severe, received_at, state
    from ranked
)

select * from final

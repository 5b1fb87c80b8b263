-- The disagreement gallery: per decision type, week and model key, the labelled decisions whose proposal
-- differs from production's outcome at `severe_confidence` or above (`int_flagged`: the ones
-- `int_decisions` keeps the id of): the 25 most confident severe errors (a high-consequence option
-- proposed) and the 25 most confident other disagreements, numbered by `rank` (severe first, then by
-- confidence). `state` is the decision's state as the sidecar stored it: redacted as the catalog
-- says before it was persisted (removed fields absent, hashed ones `hmac-sha256:<hex>`), null where the
-- decision type does not store states.
with flagged as (
    select * from int_flagged
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

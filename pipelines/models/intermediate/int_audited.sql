-- One row per audited decision of an audit sample and per model that scored it, plus one row keyed
-- `production` for production's outcome: whether it was right by the auditors' answers. A decision with
-- several auditors (a double audit) counts the mean over them (two auditors who disagree: half right).
-- For candidates also `right_vs_wrong` (the candidate right where production was wrong) and
-- `wrong_vs_right` (the reverse), and `differs` (1 where its proposal is not production's outcome: only
-- there can one be right and the other wrong). Only labelled decisions (scored, production's outcome known) are units;
-- the sampled decision is found by the 64-bit hash of its id (`int_decisions.decision_key`) and type.
with samples as (
    select sample_id, decision_type, decision_id, week, stratum, stratum_decisions,
        hash(decision_id) as decision_key
    from stg_audit_samples
),

answers as (
    select sample_id, decision_type, decision_id, answer from stg_audits
),

audited as (  -- one row per answer to a sampled decision
    select samples.*, answers.answer
    from samples
    join answers using (sample_id, decision_type, decision_id)
),

scored as (  -- every labelled row of an audited decision (one per candidate)
    select
        segments.decision_type, decisions.decision_key, decisions.week_start, segments.model_key,
        coalesce(segments.option_ids[decisions.proposal_pos::integer], decisions.proposal_other) as proposal,
        coalesce(segments.option_ids[decisions.outcome_pos::integer], decisions.outcome_other) as outcome
    from int_decisions as decisions
    join int_segments as segments using (segment)
    where decisions.labelled
      and decisions.decision_key in (select decision_key from audited)
),

production as (
    select decision_type, decision_key, max(week_start) as week_start, max(outcome) as outcome
    from scored
    group by decision_type, decision_key
),

candidates as (
    select
        audited.sample_id, audited.decision_type, audited.decision_id, audited.week, scored.week_start,
        audited.stratum, audited.stratum_decisions, scored.model_key,
        avg(case when scored.proposal = audited.answer then 1.0 else 0.0 end) as right_share,
        avg(case when scored.proposal = audited.answer and scored.outcome <> audited.answer then 1.0 else 0.0 end)
            as right_vs_wrong,
        avg(case when scored.proposal <> audited.answer and scored.outcome = audited.answer then 1.0 else 0.0 end)
            as wrong_vs_right,
        max(case when scored.proposal is distinct from scored.outcome then 1 else 0 end) as differs
    from audited
    join scored using (decision_type, decision_key)
    where strftime(scored.week_start, '%G-W%V') = audited.week
    group by audited.sample_id, audited.decision_type, audited.decision_id, audited.week, scored.week_start,
        audited.stratum, audited.stratum_decisions, scored.model_key
),

producer as (
    select
        audited.sample_id, audited.decision_type, audited.decision_id, audited.week, production.week_start,
        audited.stratum, audited.stratum_decisions, 'production' as model_key,
        avg(case when production.outcome = audited.answer then 1.0 else 0.0 end) as right_share,
        cast(null as double) as right_vs_wrong,
        cast(null as double) as wrong_vs_right,
        0 as differs
    from audited
    join production using (decision_type, decision_key)
    where strftime(production.week_start, '%G-W%V') = audited.week
    group by audited.sample_id, audited.decision_type, audited.decision_id, audited.week, production.week_start,
        audited.stratum, audited.stratum_decisions
),

final as (
    select * from candidates
    union all
    select * from producer
)

select * from final

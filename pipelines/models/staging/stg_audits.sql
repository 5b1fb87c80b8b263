-- Audits (records v1.2: outcomes rows with `source = 'audit'`) known at `as_of`: one answer per sample,
-- decision and auditor, the latest `outcome_at` winning (ties broken by the larger answer, so reruns
-- agree). Kept apart from production's outcome (`stg_outcomes` never reads them); only the `correctness`
-- marts use them. `answer` is an option id or `(none of these)` (`contracts.records.NONE_OF_THESE`).
with source as (
    select * from raw_outcomes
),

known as (
    select
        source.audit_sample as sample_id, source.decision_type, source.decision_id, source.auditor,
        source.outcome as answer, source.outcome_at
    from source
    where source.source = 'audit'
      and source.outcome_at <= getvariable('as_of')
      and source.audit_sample is not null
      and source.auditor is not null
),

latest as (  -- the newest answer: the largest (outcome_at, answer) pair, a plain aggregate (no sort)
    select sample_id, decision_type, decision_id, auditor,
        max(struct_pack(answered_at := outcome_at, answer := answer)) as newest
    from known
    group by sample_id, decision_type, decision_id, auditor
),

final as (
    select
        sample_id, decision_type, decision_id, auditor, newest.answer as answer, newest.answered_at as outcome_at
    from latest
)

select * from final

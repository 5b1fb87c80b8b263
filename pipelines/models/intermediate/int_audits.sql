-- The audits of the window (`stg_audits`: the latest answer per sample, decision and auditor), read from
-- the outcomes once: `int_audited` and `int_audit_pairs` both use them.
with audits as (
    select * from stg_audits
),

final as (
    select sample_id, decision_type, decision_id, auditor, answer, outcome_at
    from audits
)

select * from final

-- The double-audited decisions whose two auditors gave different answers (see `auditor_agreement`): one
-- row per decision, with both auditors' pseudonymous ids and answers, for a third look.
with pairs as (
    select * from int_audit_pairs
),

final as (
    select decision_type, week_start, week, sample_id, decision_id, auditor_a, answer_a, auditor_b, answer_b
    from pairs
    where answer_a <> answer_b
)

select * from final

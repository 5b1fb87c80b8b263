-- How often two auditors gave the same answer, per decision type, week and sample: over the decisions two
-- auditors answered (double audits; a third answer is left out), `observed_agreement` = agreed /
-- double_audited and Cohen's kappa = (observed - expected) / (1 - expected), where expected = sum over
-- answers of the product of the first and the second auditor's shares (auditors ordered by id on each
-- decision). The decisions they disagree on are listed in `auditor_disagreements`.
with pairs as (
    select * from int_audit_pairs
),

counts as (
    select sample_id, decision_type, week_start, week, count(*) as double_audited,
        sum(case when answer_a = answer_b then 1 else 0 end) as agreed
    from pairs
    group by sample_id, decision_type, week_start, week
),

first_answers as (
    select sample_id, decision_type, week, answer_a as answer, count(*) as n_a
    from pairs
    group by sample_id, decision_type, week, answer_a
),

second_answers as (
    select sample_id, decision_type, week, answer_b as answer, count(*) as n_b
    from pairs
    group by sample_id, decision_type, week, answer_b
),

chance as (
    select sample_id, decision_type, week, sum(n_a * n_b) as products
    from first_answers
    join second_answers using (sample_id, decision_type, week, answer)
    group by sample_id, decision_type, week
),

final as (
    select
        counts.decision_type, counts.week_start, counts.week, counts.sample_id,
        counts.double_audited::bigint as double_audited, counts.agreed::bigint as agreed,
        counts.agreed / counts.double_audited as observed_agreement,
        (counts.agreed / counts.double_audited
            - coalesce(chance.products, 0) / (counts.double_audited * counts.double_audited))
            / nullif(1 - coalesce(chance.products, 0) / (counts.double_audited * counts.double_audited), 0)
            as kappa
    from counts
    left join chance using (sample_id, decision_type, week)
)

select * from final

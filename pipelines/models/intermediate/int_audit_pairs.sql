-- The decisions two auditors answered (double audits): one row per decision with the first two auditors'
-- answers (ordered by auditor id), in the week of the decision (`int_audited`'s production rows).
with answers as (
    select * from stg_audits
),

audited as (
    select sample_id, decision_type, decision_id, week, week_start
    from int_audited
    where model_key = 'production'
),

ranked as (
    select
        answers.sample_id, answers.decision_type, answers.decision_id, answers.auditor, answers.answer,
        row_number() over (
            partition by answers.sample_id, answers.decision_type, answers.decision_id order by answers.auditor
        ) as position
    from answers
),

final as (
    select
        audited.decision_type, audited.week_start, audited.week, audited.sample_id, audited.decision_id,
        a.auditor as auditor_a, a.answer as answer_a, b.auditor as auditor_b, b.answer as answer_b
    from audited
    join ranked as a
        on a.sample_id = audited.sample_id and a.decision_type = audited.decision_type
        and a.decision_id = audited.decision_id and a.position = 1
    join ranked as b
        on b.sample_id = audited.sample_id and b.decision_type = audited.decision_type
        and b.decision_id = audited.decision_id and b.position = 2
)

select * from final

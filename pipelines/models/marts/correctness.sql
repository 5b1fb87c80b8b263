-- Audited correctness per decision type, week and model key, plus one row keyed `production`: the
-- design-based estimate from an audit sample drawn by stratum (`semif-shadow audit sample`), over the
-- decisions the model scored (production: every labelled decision), with its 95% interval (z for
-- `bootstrap_level`), and for each candidate the share of decisions where it was right and production wrong
-- (`right_vs_wrong`) and the reverse (`wrong_vs_right`), each with its interval.
--
-- Estimates, intervals and their references: `int_audit_estimates` (a stratified mean over the model's
-- scored decisions; MOVER over per-stratum Wilson intervals, no finite-population correction).
-- low = theta - sqrt(below + z^2 size_var), high = theta + sqrt(above + z^2 size_var), clipped to [0, 1];
-- `correctness_se` = sqrt(variance + size_var), the linearized standard error. Every estimate is null while a
-- stratum of the sample has no audit (the sample then says nothing about that stratum's decisions).
with estimates as (
    select * from int_audit_estimates
),

bounded as (
    select
        estimates.*,
        case when every_stratum_audited then estimate end as shown,
        case when every_stratum_audited then sqrt(variance + size_var) end as se,
        case when every_stratum_audited then greatest(estimate - sqrt(below + z * z * size_var), 0.0) end as low,
        case when every_stratum_audited then least(estimate + sqrt(above + z * z * size_var), 1.0) end as high
    from estimates
),

sampled as (
    select sample_id, decision_type, week, count(*) as sampled
    from stg_audit_samples
    group by sample_id, decision_type, week
),

final as (
    select
        c.decision_type, c.week_start, c.week, c.model_key, c.sample_id, c.decisions::bigint as decisions,
        sampled.sampled::bigint as sampled, c.audited::bigint as audited,
        c.shown as correctness, c.se as correctness_se, c.low as correctness_low, c.high as correctness_high,
        rw.shown as right_vs_wrong, rw.low as right_vs_wrong_low, rw.high as right_vs_wrong_high,
        wr.shown as wrong_vs_right, wr.low as wrong_vs_right_low, wr.high as wrong_vs_right_high
    from bounded as c
    join sampled using (sample_id, decision_type, week)
    left join bounded as rw
        on rw.sample_id = c.sample_id and rw.decision_type = c.decision_type and rw.week = c.week
        and rw.model_key = c.model_key and rw.measure = 'right_vs_wrong' and c.model_key <> 'production'
    left join bounded as wr
        on wr.sample_id = c.sample_id and wr.decision_type = c.decision_type and wr.week = c.week
        and wr.model_key = c.model_key and wr.measure = 'wrong_vs_right' and c.model_key <> 'production'
    where c.measure = 'model'
)

select * from final

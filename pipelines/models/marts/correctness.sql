-- Audited correctness per decision type, week and model key, plus one row keyed `production`: the
-- design-weighted estimate over every labelled decision of the week from an audit sample drawn by stratum
-- (`semif-shadow audit sample`), with its 95% interval (z for `bootstrap_level`), and for each candidate
-- the share of decisions where it was right and production wrong (`right_vs_wrong`) and the reverse
-- (`wrong_vs_right`), each with its interval.
--
-- The estimator is the combined stratified ratio estimator (Cochran 1977, 6.11; Lohr 2019, 4.5):
-- R = sum_h N_h/m_h sum_i y_i / sum_h N_h/m_h sum_i x_i, where N_h is the stratum's labelled decisions when
-- the sample was drawn, m_h its audited decisions, y_i whether the model was right (mean over the
-- decision's auditors) and x_i whether the model scored the decision (always 1 for production, so its
-- estimate is the stratified mean). `correctness_se` is the linearization standard error with the finite
-- population correction: V(R) = 1/X^2 sum_h N_h^2 (1 - m_h/N_h) s2_h / m_h, s2_h the sample variance of the
-- residuals e_i = y_i - R x_i in stratum h. The interval is R +- z sqrt(V') clipped to [0, 1], where V'
-- computes each s2_h with one right and one wrong pseudo-decision added to the stratum (the adjustment of
-- Agresti & Caffo 2000), so a stratum whose audits all agree still carries its uncertainty. A census stratum
-- (every decision audited) adds none. Estimates are null while a stratum of the sample has no audit.
with params as (
    select paired_z as z from run_params
),

samples as (
    select sample_id, decision_type, week, stratum, max(stratum_decisions) as stratum_size, count(*) as sampled
    from stg_audit_samples
    group by sample_id, decision_type, week, stratum
),

units as (
    select * from int_audited
),

audited_strata as (  -- m_h: audited decisions per stratum (the production rows: one per audited decision)
    select sample_id, decision_type, week, stratum, count(*) as m
    from units
    where model_key = 'production'
    group by sample_id, decision_type, week, stratum
),

strata as (
    select samples.*, coalesce(audited_strata.m, 0) as m
    from samples
    left join audited_strata using (sample_id, decision_type, week, stratum)
),

coverage as (  -- per sample: the population, the sample, and whether every stratum has an audit
    select sample_id, decision_type, week, sum(stratum_size) as decisions, sum(sampled) as sampled,
        min(m) > 0 as every_stratum_audited
    from strata
    group by sample_id, decision_type, week
),

model_weeks as (
    select sample_id, decision_type, week, model_key, max(week_start) as week_start
    from units
    group by sample_id, decision_type, week, model_key
),

measures as (  -- one row per model, stratum and measure (y): the sums the estimator needs (x in {0, 1})
    select sample_id, decision_type, week, model_key, stratum, measure, count(*) as sx, sum(y) as sy,
        sum(y * y) as syy
    from (
        select sample_id, decision_type, week, model_key, stratum, 'correctness' as measure, right_share as y
        from units
        union all
        select sample_id, decision_type, week, model_key, stratum, 'right_vs_wrong', right_vs_wrong
        from units where model_key <> 'production'
        union all
        select sample_id, decision_type, week, model_key, stratum, 'wrong_vs_right', wrong_vs_right
        from units where model_key <> 'production'
    )
    group by sample_id, decision_type, week, model_key, stratum, measure
),

weighted as (  -- every stratum of the sample for every model and measure (a stratum it never scored: zeros)
    select
        keys.sample_id, keys.decision_type, keys.week, keys.model_key, keys.measure, strata.stratum,
        strata.stratum_size::double as big_n, strata.m::double as m,
        coalesce(measures.sx, 0)::double as sx, coalesce(measures.sy, 0.0) as sy,
        coalesce(measures.syy, 0.0) as syy
    from (select distinct sample_id, decision_type, week, model_key, measure from measures) as keys
    join strata using (sample_id, decision_type, week)
    left join measures using (sample_id, decision_type, week, model_key, measure, stratum)
),

ratios as (
    select sample_id, decision_type, week, model_key, measure,
        sum(case when m > 0 then big_n / m * sx else 0.0 end) as x_hat,
        sum(case when m > 0 then big_n / m * sy else 0.0 end) as y_hat,
        sum(sx)::bigint as audited
    from weighted
    group by sample_id, decision_type, week, model_key, measure
),

residuals as (  -- per stratum: sum of e and of e^2, as observed and with the two pseudo-decisions
    select
        weighted.*, ratios.y_hat / nullif(ratios.x_hat, 0) as r, ratios.x_hat,
        weighted.sy - ratios.y_hat / nullif(ratios.x_hat, 0) * weighted.sx as se1,
        weighted.syy - 2 * ratios.y_hat / nullif(ratios.x_hat, 0) * weighted.sy
            + power(ratios.y_hat / nullif(ratios.x_hat, 0), 2) * weighted.sx as se2
    from weighted
    join ratios using (sample_id, decision_type, week, model_key, measure)
),

terms as (
    select
        sample_id, decision_type, week, model_key, measure,
        case when m > 0 then big_n * big_n * (1 - m / big_n) / m
            * (se2 - se1 * se1 / m) / nullif(m - 1, 0) end as term,
        case when m > 0 then big_n * big_n * (1 - m / big_n) / m
            * ((se2 + power(1 - r, 2) + r * r) - power(se1 + 1 - 2 * r, 2) / (m + 2)) / (m + 1) end as term_adjusted,
        r, x_hat
    from residuals
),

estimates as (
    select
        sample_id, decision_type, week, model_key, measure,
        max(r) as estimate,
        sqrt(greatest(sum(term), 0.0)) / max(x_hat) as se,
        sqrt(greatest(sum(term_adjusted), 0.0)) / max(x_hat) as se_adjusted
    from terms
    group by sample_id, decision_type, week, model_key, measure
),

bounded as (
    select
        estimates.*, ratios.audited,
        greatest(estimates.estimate - params.z * estimates.se_adjusted, 0.0) as low,
        least(estimates.estimate + params.z * estimates.se_adjusted, 1.0) as high
    from estimates
    join ratios using (sample_id, decision_type, week, model_key, measure)
    cross join params
),

final as (
    select
        model_weeks.decision_type, model_weeks.week_start, model_weeks.week, model_weeks.model_key,
        model_weeks.sample_id, coverage.decisions::bigint as decisions, coverage.sampled::bigint as sampled,
        c.audited,
        case when coverage.every_stratum_audited then c.estimate end as correctness,
        case when coverage.every_stratum_audited then c.se end as correctness_se,
        case when coverage.every_stratum_audited then c.low end as correctness_low,
        case when coverage.every_stratum_audited then c.high end as correctness_high,
        case when coverage.every_stratum_audited then rw.estimate end as right_vs_wrong,
        case when coverage.every_stratum_audited then rw.low end as right_vs_wrong_low,
        case when coverage.every_stratum_audited then rw.high end as right_vs_wrong_high,
        case when coverage.every_stratum_audited then wr.estimate end as wrong_vs_right,
        case when coverage.every_stratum_audited then wr.low end as wrong_vs_right_low,
        case when coverage.every_stratum_audited then wr.high end as wrong_vs_right_high
    from model_weeks
    join coverage using (sample_id, decision_type, week)
    join bounded as c
        on c.sample_id = model_weeks.sample_id and c.decision_type = model_weeks.decision_type
        and c.week = model_weeks.week and c.model_key = model_weeks.model_key and c.measure = 'correctness'
    left join bounded as rw
        on rw.sample_id = model_weeks.sample_id and rw.decision_type = model_weeks.decision_type
        and rw.week = model_weeks.week and rw.model_key = model_weeks.model_key and rw.measure = 'right_vs_wrong'
    left join bounded as wr
        on wr.sample_id = model_weeks.sample_id and wr.decision_type = model_weeks.decision_type
        and wr.week = model_weeks.week and wr.model_key = model_weeks.model_key and wr.measure = 'wrong_vs_right'
)

select * from final

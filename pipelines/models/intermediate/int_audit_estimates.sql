-- Design-based estimates from the audit sample's strata (`audit_strata`), one row per sample, decision type,
-- week, model key and measure: `model` (the model right), `production` (production right on the decisions
-- the model scored), `right_vs_wrong`, `wrong_vs_right` and `difference` (the model right minus production
-- right on each decision: right_vs_wrong - wrong_vs_right).
--
-- Each measure is a stratified mean over the decisions the model scored (a domain): theta = sum_h W_h p_h,
-- with W_h = N^_h / N^, N^_h = N_h n_h / m_h the stratum's decisions the model scored (N_h the stratum's
-- labelled decisions, m_h its audited decisions, n_h those the model scored) and p_h the stratum's share
-- over its n_h audited decisions. The paired measures (`right_vs_wrong`, `wrong_vs_right`, `difference`)
-- can be non-zero only where the model's proposal differs from production's outcome, so they are shares
-- over the stratum's k_h discordant audited decisions, weighted W_h q_h (q_h = k_h / n_h): a stratum where
-- the two always agree (the `agree` stratum) adds neither estimate nor uncertainty, whatever its audits.
-- The target is the process's rate (the week's decisions are themselves a draw from it), so no
-- finite-population correction: a stratum audited in full still carries the variance of its N_h decisions.
--
-- The interval is MOVER (Zou & Donner 2008) over Wilson score intervals with continuity correction
-- (Wilson 1927; Newcombe 1998, method 4) per stratum:
-- `below` = sum_h W_h^2 (p_h - l_h)^2 and `above` = sum_h W_h^2 (u_h - p_h)^2, with (l_h, u_h) the Wilson
-- interval of p_h on n_h (paired: k_h) decisions at z; `size_var` = sum_h W_h (q_h p_h - theta)^2 / N^, the
-- variance from the strata's sizes being random, plus (paired measures) sum_h W_h^2 p_h^2 q_h (1 - q_h) / n_h,
-- the variance of the discordant share q_h where it is sampled (zero where it is 0 or 1). The corrected
-- Wilson interval keeps its coverage with 0-3 events or one or two audits in a stratum, where the
-- linearized (Wald) variance collapses and the plain Wilson interval is too short (1 of 2 audits wrong:
-- its upper limit is 0.906, the corrected one's 0.973).
-- `variance` = sum_h W_h^2 v_h / n_h with v_h the unit variance (p_h (1 - p_h); for `difference`
-- r_h + w_h - (r_h - w_h)^2, r_h and w_h over the k_h): the linearized variance, which the paired difference
-- uses for the correlation of its two sides. `every_stratum_audited` is false while a
-- stratum of the sample has no audit: the estimate is then left null (a stratum's share is unknown).
with params as (
    select paired_z as z from run_params
),

strata as (
    select * from audit_strata
),

domains as (
    select sample_id, decision_type, week, model_key, max(week_start) as week_start,
        sum(case when audited > 0 then stratum_decisions * units / audited else 0.0 end) as domain,
        sum(stratum_decisions) as decisions, sum(units) as audited,
        min(audited) > 0 as every_stratum_audited
    from strata
    group by sample_id, decision_type, week, model_key
),

measures as (  -- n: the decisions a share is over; scale: their part of the model's audited decisions
    select sample_id, decision_type, week, model_key, stratum, stratum_decisions, audited, units,
        'model' as measure, model_right as y, 0.0 as other, units as n
    from strata
    union all
    select sample_id, decision_type, week, model_key, stratum, stratum_decisions, audited, units,
        'production', production_right, 0.0, units
    from strata
    union all
    select sample_id, decision_type, week, model_key, stratum, stratum_decisions, audited, units,
        'right_vs_wrong', right_vs_wrong, 0.0, discordant
    from strata
    union all
    select sample_id, decision_type, week, model_key, stratum, stratum_decisions, audited, units,
        'wrong_vs_right', wrong_vs_right, 0.0, discordant
    from strata
    union all
    select sample_id, decision_type, week, model_key, stratum, stratum_decisions, audited, units,
        'difference', right_vs_wrong - wrong_vs_right, right_vs_wrong + wrong_vs_right, discordant
    from strata
),

shares as (  -- the strata the model scored (p and its Wilson limits are null where there is nothing to share)
    select
        measures.sample_id, measures.decision_type, measures.week, measures.model_key, measures.measure,
        measures.n::double as n,
        measures.stratum_decisions * measures.units / measures.audited / domains.domain as stratum_w,
        measures.stratum_decisions * measures.n / measures.audited / domains.domain as w,
        measures.n / measures.units as q,
        measures.units::double as units,
        measures.y / measures.units as mu,
        measures.y / nullif(measures.n, 0) as p,
        case when measures.measure = 'difference'
            then measures.other / nullif(measures.n, 0) - power(measures.y / nullif(measures.n, 0), 2)
            else measures.y / nullif(measures.n, 0) * (1 - measures.y / nullif(measures.n, 0)) end as v
    from measures
    join domains using (sample_id, decision_type, week, model_key)
    where measures.units > 0 and domains.domain > 0
),

wilson as (  -- with continuity correction (Newcombe 1998, method 4); 0 and 1 at the ends
    select shares.*,
        case when p <= 0 then 0.0 else greatest((2 * n * p + z * z - 1 - z * sqrt(greatest(
            z * z - 2 - 1 / n + 4 * p * (n * (1 - p) + 1), 0.0))) / (2 * (n + z * z)), 0.0) end as l,
        case when p >= 1 then 1.0 else least((2 * n * p + z * z + 1 + z * sqrt(greatest(
            z * z + 2 - 1 / n + 4 * p * (n * (1 - p) - 1), 0.0))) / (2 * (n + z * z)), 1.0) end as u
    from shares
    cross join params
),

sums as (  -- strata with nothing to share over (n = 0) weigh nothing
    select sample_id, decision_type, week, model_key, measure,
        coalesce(sum(case when n > 0 then w * p end), 0.0) as estimate,
        coalesce(sum(case when n > 0 then w * w * power(greatest(p - l, 0.0), 2) end), 0.0) as below,
        coalesce(sum(case when n > 0 then w * w * power(greatest(u - p, 0.0), 2) end), 0.0) as above,
        coalesce(sum(case when n > 0 then w * w * greatest(v, 0.0) / n end), 0.0) as variance,
        coalesce(sum(case when n > 0 then stratum_w * stratum_w * p * p * q * (1 - q) / units end), 0.0)
            as discordance
    from wilson
    group by sample_id, decision_type, week, model_key, measure
),

spread as (
    select wilson.sample_id, wilson.decision_type, wilson.week, wilson.model_key, wilson.measure,
        sum(wilson.stratum_w * power(wilson.mu - sums.estimate, 2)) / max(domains.domain)
            + max(sums.discordance) as size_var
    from wilson
    join sums using (sample_id, decision_type, week, model_key, measure)
    join domains using (sample_id, decision_type, week, model_key)
    group by wilson.sample_id, wilson.decision_type, wilson.week, wilson.model_key, wilson.measure
),

final as (
    select
        domains.decision_type, domains.week_start, domains.week, domains.sample_id, domains.model_key,
        sums.measure, domains.decisions, domains.audited, domains.domain, domains.every_stratum_audited,
        sums.estimate, sums.below, sums.above, sums.variance, spread.size_var, params.z
    from domains
    join sums using (sample_id, decision_type, week, model_key)
    join spread using (sample_id, decision_type, week, model_key, measure)
    cross join params
)

select * from final

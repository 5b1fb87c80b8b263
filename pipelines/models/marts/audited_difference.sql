-- The paired audited comparison per decision type, week and candidate: over the decisions the candidate
-- scored, its audited correctness minus production's on the same decisions (`diff`), with a 95% interval
-- (z for `bootstrap_level`; `diff_low` is the one-sided lower bound at (1 - level) / 2), beside both sides'
-- own correctness and intervals. The review's audited gate pools these weeks' `audit_strata` at its own
-- level (docs/review.md); this mart is the week alone.
--
-- diff = A - B with A = right where production was wrong and B = wrong where production was right (each a
-- stratified share, `int_audit_estimates`): where the two agree a decision adds nothing, so no audit of
-- the agreements is needed for it. The interval is MOVER for a difference of correlated estimates (Zou &
-- Donner 2008; Newcombe 1998, method 10, for one stratum): with (l_A, u_A) and (l_B, u_B) their MOVER-Wilson
-- limits and rho their correlation (from the linearized variances: cov = (V_A + V_B - V_diff) / 2; negative,
-- as a decision where one is right and the other wrong counts on one side only),
-- diff_low  = diff - sqrt((A - l_A)^2 + (u_B - B)^2 - 2 rho (A - l_A)(u_B - B) + z^2 size_var),
-- diff_high = diff + sqrt((u_A - A)^2 + (B - l_B)^2 - 2 rho (u_A - A)(B - l_B) + z^2 size_var),
-- `size_var` the difference's variance from the strata's sizes. Null while a stratum has no audit.
with estimates as (
    select * from int_audit_estimates
    where model_key <> 'production'
),

sides as (  -- one row per candidate: each measure's columns side by side
    select
        decision_type, week_start, week, sample_id, model_key, decisions, audited, domain,
        every_stratum_audited, z,
        max(case when measure = 'difference' then estimate end) as diff,
        max(case when measure = 'difference' then size_var end) as size_var,
        max(case when measure = 'difference' then variance end) as v_diff,
        max(case when measure = 'right_vs_wrong' then below end) as a_below,
        max(case when measure = 'right_vs_wrong' then above end) as a_above,
        max(case when measure = 'right_vs_wrong' then variance end) as v_a,
        max(case when measure = 'wrong_vs_right' then below end) as b_below,
        max(case when measure = 'wrong_vs_right' then above end) as b_above,
        max(case when measure = 'wrong_vs_right' then variance end) as v_b,
        max(case when measure = 'model' then estimate end) as candidate,
        max(case when measure = 'model' then below end) as m_below,
        max(case when measure = 'model' then above end) as m_above,
        max(case when measure = 'model' then size_var end) as m_size_var,
        max(case when measure = 'production' then estimate end) as production,
        max(case when measure = 'production' then below end) as p_below,
        max(case when measure = 'production' then above end) as p_above,
        max(case when measure = 'production' then size_var end) as p_size_var
    from estimates
    group by decision_type, week_start, week, sample_id, model_key, decisions, audited, domain,
        every_stratum_audited, z
),

correlated as (
    select sides.*,
        case when v_a > 0 and v_b > 0
            then least(greatest((v_a + v_b - v_diff) / (2 * sqrt(v_a * v_b)), -1.0), 1.0) else 0.0 end as rho
    from sides
),

final as (
    select
        decision_type, week_start, week, model_key, sample_id, decisions::bigint as decisions,
        audited::bigint as audited, domain as scored_decisions,
        case when every_stratum_audited then diff end as diff,
        case when every_stratum_audited then diff - sqrt(greatest(
            a_below + b_above - 2 * rho * sqrt(a_below * b_above) + z * z * size_var, 0.0)) end as diff_low,
        case when every_stratum_audited then diff + sqrt(greatest(
            a_above + b_below - 2 * rho * sqrt(a_above * b_below) + z * z * size_var, 0.0)) end as diff_high,
        case when every_stratum_audited then rho end as rho,
        case when every_stratum_audited then candidate end as candidate_correctness,
        case when every_stratum_audited
            then greatest(candidate - sqrt(m_below + z * z * m_size_var), 0.0) end as candidate_low,
        case when every_stratum_audited
            then least(candidate + sqrt(m_above + z * z * m_size_var), 1.0) end as candidate_high,
        case when every_stratum_audited then production end as production_correctness,
        case when every_stratum_audited
            then greatest(production - sqrt(p_below + z * z * p_size_var), 0.0) end as production_low,
        case when every_stratum_audited
            then least(production + sqrt(p_above + z * z * p_size_var), 1.0) end as production_high
    from correlated
)

select * from final

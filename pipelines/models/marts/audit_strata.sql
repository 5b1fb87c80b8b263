-- The audit sample's sufficient statistics, one row per sample, decision type, week, model key and stratum
-- (every stratum of the sample for every model key, so a stratum without audits is a row with `audited` 0):
-- `stratum_decisions` (N_h, the stratum's labelled decisions when the sample was drawn), `sampled`, `audited`
-- (m_h, its audited decisions), and over the audited decisions the model scored (`units`, n_h): how many it
-- got right (`model_right`), on how many its proposal differs from production's outcome (`discordant`: only
-- there can one be right and the other wrong), how many production got right on those same decisions (`production_right`),
-- and how many it got right where production was wrong (`right_vs_wrong`) and wrong where production was
-- right (`wrong_vs_right`). A decision two auditors answered counts the mean over them (half right where
-- they disagree). The key `production` is production's own outcome over every audited decision.
-- `correctness` and `audited_difference` are built from these sums (`int_audit_estimates`), and the review
-- pools them over weeks for the audited gate (docs/pipelines.md, docs/review.md).
with samples as (
    select sample_id, decision_type, week, stratum, max(stratum_decisions) as stratum_decisions,
        count(*) as sampled
    from stg_audit_samples
    group by sample_id, decision_type, week, stratum
),

production as (  -- one row per audited decision: production's share right
    select sample_id, decision_type, decision_id, week, week_start, stratum, right_share
    from int_audited
    where model_key = 'production'
),

audited as (  -- m_h
    select sample_id, decision_type, week, stratum, count(*) as audited
    from production
    group by sample_id, decision_type, week, stratum
),

units as (  -- each model's audited decisions beside production's answer on the same decision
    select
        c.sample_id, c.decision_type, c.week, c.week_start, c.model_key, c.stratum,
        c.right_share as model_right, p.right_share as production_right,
        c.right_vs_wrong, c.wrong_vs_right, c.differs
    from int_audited as c
    join production as p using (sample_id, decision_type, decision_id)
    where c.model_key <> 'production'
    union all
    select
        sample_id, decision_type, week, week_start, 'production' as model_key, stratum,
        right_share as model_right, right_share as production_right,
        0.0 as right_vs_wrong, 0.0 as wrong_vs_right, 0 as differs
    from production
),

sums as (
    select sample_id, decision_type, week, model_key, stratum, count(*) as units, sum(differs) as discordant,
        sum(model_right) as model_right, sum(production_right) as production_right,
        sum(right_vs_wrong) as right_vs_wrong, sum(wrong_vs_right) as wrong_vs_right
    from units
    group by sample_id, decision_type, week, model_key, stratum
),

keys as (
    select sample_id, decision_type, week, model_key, max(week_start) as week_start
    from units
    group by sample_id, decision_type, week, model_key
),

final as (
    select
        keys.decision_type, keys.week_start, keys.week, keys.model_key, keys.sample_id, samples.stratum,
        samples.stratum_decisions::bigint as stratum_decisions, samples.sampled::bigint as sampled,
        coalesce(audited.audited, 0)::bigint as audited, coalesce(sums.units, 0)::bigint as units,
        coalesce(sums.discordant, 0)::bigint as discordant,
        coalesce(sums.model_right, 0.0) as model_right, coalesce(sums.production_right, 0.0) as production_right,
        coalesce(sums.right_vs_wrong, 0.0) as right_vs_wrong, coalesce(sums.wrong_vs_right, 0.0) as wrong_vs_right
    from keys
    join samples using (sample_id, decision_type, week)
    left join audited using (sample_id, decision_type, week, stratum)
    left join sums using (sample_id, decision_type, week, model_key, stratum)
)

select * from final

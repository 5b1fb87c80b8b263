-- Week-over-week drift per decision type and model identity: the week's top-label ECE against the
-- `reference_weeks` weeks before it, the confidence PSI and the proposal and outcome mix PSI, with the
-- usual bands (< 0.1 stable, < 0.25 moderate, else significant).
-- ECE alert, from the first reference week on: the week's ECE interval lies wholly above the interval of
-- every reference week (ece_low > the highest reference ece_high: the rise is more than either week's
-- sampling noise). Once there are `min_reference_weeks`, the ECE must also exceed the reference weeks'
-- mean + 3 sample standard deviations (unusual against the weeks' own spread, which fewer weeks estimate
-- too poorly to use, and which keeps large weeks' narrow intervals from alerting on small real changes).
with weekly as (
    select decision_type, week_start, week, model_key, ece, ece_low, ece_high, labelled, label_rate
    from calibration
),

params as (
    select * from run_params
),

reference as (
    select
        target.decision_type, target.week_start, target.model_key,
        avg(ref.ece) as reference_ece_mean,
        stddev_samp(ref.ece) as reference_ece_sd,
        count(ref.ece) as reference_ece_weeks,
        max(ref.ece_high) as reference_ece_high
    from weekly as target
    join int_reference_window as window_weeks using (decision_type, model_key, week_start)
    join weekly as ref
        on ref.decision_type = target.decision_type
        and ref.model_key = target.model_key
        and ref.week_start = window_weeks.reference_week_start
    group by all
),

final as (
    select
        weekly.decision_type, weekly.week_start, weekly.week, weekly.model_key,
        weekly.labelled, weekly.label_rate, weekly.ece, weekly.ece_low,
        reference.reference_ece_mean, reference.reference_ece_sd, reference.reference_ece_weeks,
        reference.reference_ece_high,
        reference.reference_ece_mean + 3 * reference.reference_ece_sd as ece_alert_above,
        coalesce(
            weekly.ece_low > reference.reference_ece_high
            and (reference.reference_ece_weeks < params.min_reference_weeks
                 or weekly.ece > reference.reference_ece_mean + 3 * reference.reference_ece_sd),
            false) as ece_alert,
        conf.confidence_psi,
        case when conf.confidence_psi < 0.1 then 'stable' when conf.confidence_psi < 0.25 then 'moderate'
             when conf.confidence_psi is not null then 'significant' end as confidence_psi_band,
        mix.proposal_mix_psi,
        mix.outcome_mix_psi,
        case when greatest(mix.proposal_mix_psi, mix.outcome_mix_psi) < 0.1 then 'stable'
             when greatest(mix.proposal_mix_psi, mix.outcome_mix_psi) < 0.25 then 'moderate'
             when mix.proposal_mix_psi is not null then 'significant' end as mix_psi_band
    from weekly
    cross join params
    left join reference using (decision_type, week_start, model_key)
    left join drift_confidence as conf using (decision_type, week_start, model_key)
    left join drift_mix as mix using (decision_type, week_start, model_key)
)

select * from final

-- Week-over-week drift per decision type and model identity: the week's top-label ECE against the
-- `reference_weeks` weeks before it (alert above their mean + 3 sample standard deviations, once there
-- are `min_reference_weeks` of them: two weeks give a standard deviation too noisy to alert on), the confidence PSI and the proposal and outcome mix PSI, with the
-- usual bands (< 0.1 stable, < 0.25 moderate, else significant).
with weekly as (
    select decision_type, week_start, week, model_key, ece, labelled, label_rate from calibration
),

params as (
    select * from run_params
),

reference as (
    select
        target.decision_type, target.week_start, target.model_key,
        avg(ref.ece) as reference_ece_mean,
        stddev_samp(ref.ece) as reference_ece_sd,
        count(ref.ece) as reference_ece_weeks
    from weekly as target
    cross join params
    join weekly as ref
        on ref.decision_type = target.decision_type
        and ref.model_key = target.model_key
        and ref.week_start < target.week_start
        and ref.week_start >= target.week_start - to_days(7 * params.reference_weeks)
    group by all
),

final as (
    select
        weekly.decision_type, weekly.week_start, weekly.week, weekly.model_key,
        weekly.labelled, weekly.label_rate, weekly.ece,
        reference.reference_ece_mean, reference.reference_ece_sd, reference.reference_ece_weeks,
        reference.reference_ece_mean + 3 * reference.reference_ece_sd as ece_alert_above,
        coalesce(reference.reference_ece_weeks >= params.min_reference_weeks
                 and weekly.ece > reference.reference_ece_mean + 3 * reference.reference_ece_sd, false) as ece_alert,
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

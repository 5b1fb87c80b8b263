-- Classwise calibration per option: the option's probability against "the outcome was this option",
-- in `classwise_bins` equal-width bins (sklearn calibration_curve(strategy="uniform"): bin j holds
-- (j/B, (j+1)/B]). Over labelled decisions whose outcome is one of the declared options.
with labelled as (
    select decision_type, week_start, week, model_key, outcome, option_ids, probabilities
    from int_decisions
    where labelled and outcome_in_options
),

params as (
    select classwise_bins from run_params
),

classes as (
    select
        decision_type, week_start, week, model_key, outcome,
        unnest(option_ids) as option_id,
        unnest(probabilities) as p
    from labelled
),

per_model as (
    select
        classes.decision_type, classes.week_start, classes.week, classes.model_key, classes.option_id,
        greatest(0, least(params.classwise_bins - 1, ceil(classes.p * params.classwise_bins)::int - 1)) as bin,
        count(*) as n,
        sum(classes.p) as sum_p,
        sum((classes.option_id = classes.outcome)::int) as hits
    from classes, params
    group by all
),

scoped as (
    select * from per_model
    union all
    select decision_type, week_start, week, '*', option_id, bin, sum(n), sum(sum_p), sum(hits)
    from per_model
    group by all
),

final as (
    select
        decision_type, week_start, week, model_key, option_id,
        sum(n) as decisions,
        sum(abs(sum_p - hits)) / sum(n) as ece,
        max(abs(sum_p - hits) / n) as mce,
        sum(hits) / sum(n) as prevalence
    from scoped
    group by all
)

select * from final

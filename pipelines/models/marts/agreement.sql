-- Agreement with production's outcome and Cohen's kappa per decision type, week and model identity, beside
-- the best constant (always the most frequent outcome: agreement = its share, kappa = 0), the label rate
-- and severe errors. Agreement, not accuracy: where production is wrong, a right proposal disagrees.
-- An outcome outside the options is a miss for every candidate; `outside_options` counts those labelled
-- decisions and `outside_options_rate` is their share of the labelled.
with options as (
    select * from per_option
),

rates as (
    select * from int_label_rates
),

severe as (
    select decision_type, week_start, model_key, count(*) as severe_errors
    from (
        select decision_type, week_start, model_key from severe_errors
        union all
        select decision_type, week_start, '*' from severe_errors
    )
    group by all
),

outside as (
    select decision_type, week_start, model_key, sum(n) filter (where not outcome_in_options) as outside_options
    from int_cube_scoped
    group by all
),

summed as (
    select
        decision_type, week_start, week, model_key,
        max(labelled)::bigint as labelled,
        sum(true_positives) / max(labelled) as agreement,
        sum(predicted * support) / (max(labelled) * max(labelled)) as chance_agreement,
        max(support) / max(labelled) as baseline_agreement
    from options
    group by all
),

final as (
    select
        summed.decision_type, summed.week_start, summed.week, summed.model_key,
        rates.scored, summed.labelled, rates.label_rate,
        summed.agreement,
        (summed.agreement - summed.chance_agreement) / nullif(1 - summed.chance_agreement, 0) as kappa,
        summed.baseline_agreement,
        0.0::double as baseline_kappa,
        coalesce(severe.severe_errors, 0) as severe_errors,
        coalesce(outside.outside_options, 0)::bigint as outside_options,
        coalesce(outside.outside_options, 0) / summed.labelled as outside_options_rate
    from summed
    join rates using (decision_type, week_start, model_key)
    left join severe using (decision_type, week_start, model_key)
    left join outside using (decision_type, week_start, model_key)
)

select * from final

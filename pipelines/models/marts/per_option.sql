-- Per-option precision and recall, beside the constant "always this option" baseline
-- (precision = the option's prevalence, recall = 1).
with cells as (
    select * from confusion
),

predicted as (
    select
        decision_type, week_start, week, model_key, proposal as option_id,
        sum(decisions) as predicted,
        sum(decisions) filter (where proposal = outcome) as true_positives
    from cells
    group by all
),

support as (
    select decision_type, week_start, week, model_key, outcome as option_id, sum(decisions) as support
    from cells
    group by all
),

totals as (
    select decision_type, week_start, model_key, sum(decisions) as labelled
    from cells
    group by all
),

final as (
    select
        decision_type, week_start, week, model_key, option_id,
        coalesce(predicted.predicted, 0)::bigint as predicted,
        coalesce(predicted.true_positives, 0)::bigint as true_positives,
        coalesce(support.support, 0)::bigint as support,
        totals.labelled::bigint as labelled,
        coalesce(predicted.true_positives, 0) / nullif(predicted.predicted, 0) as "precision",
        coalesce(predicted.true_positives, 0) / nullif(support.support, 0) as recall,
        coalesce(support.support, 0) / totals.labelled as baseline_precision,
        1.0::double as baseline_recall,
        rates.label_rate
    from predicted
    full outer join support using (decision_type, week_start, week, model_key, option_id)
    join totals using (decision_type, week_start, model_key)
    join (select decision_type, week_start, model_key, label_rate from int_label_rates) as rates
        using (decision_type, week_start, model_key)
)

select * from final

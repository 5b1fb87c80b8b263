-- Calibration summary per decision type, week and model identity: top-label ECE over equal-mass bins
-- (the plug-in `ece`, then from ece_bootstrap the debiased estimate and the interval of the true ECE),
-- MCE, classwise ECE, multiclass Brier score (sum over options of the squared error, range [0, 2], as
-- sklearn's brier_score_loss for multiclass) and log-loss, each beside the constant-prevalence baseline.
-- Brier, log-loss and classwise ECE use labelled decisions whose outcome is a declared option;
-- `outside_options` counts the others (they count as errors for the ECE).
-- Every figure here is over decisions whose probabilities are the model's: `one_hot_excluded` counts the
-- labelled decisions left out because their probabilities are one-hot (the chat backend without
-- log-probabilities); a model whose decisions are all one-hot has a row with its counts and no figures.
with bins as (
    select * from reliability
),

cube as (
    select * from int_cube_scoped
),

keys as (
    select decision_type, week_start, week, model_key from cube group by all
),

top_label as (
    select
        decision_type, week_start, model_key,
        sum(abs(sum_confidence - correct)) / sum(decisions) as ece,
        max(abs(mean_confidence - agreement)) as mce,
        count(*) as bins
    from bins
    group by all
),

scores as (
    select
        decision_type, week_start, model_key,
        coalesce(sum(n) filter (where not outcome_in_options and not one_hot), 0)::bigint as outside_options,
        sum(sum_brier) filter (where outcome_in_options and not one_hot)
            / sum(n) filter (where outcome_in_options and not one_hot) as brier,
        sum(sum_log_loss) filter (where outcome_in_options and not one_hot)
            / sum(n) filter (where outcome_in_options and not one_hot) as log_loss,
        coalesce(sum(n) filter (where one_hot), 0)::bigint as one_hot_excluded
    from cube
    group by all
),

prevalence as (
    select
        decision_type, week_start, model_key,
        1 - sum(prevalence * prevalence) as brier_baseline,
        -sum(prevalence * ln(prevalence)) filter (where prevalence > 0) as log_loss_baseline,
        avg(ece) as classwise_ece
    from classwise_calibration
    group by all
),

final as (
    select
        keys.decision_type, keys.week_start, keys.week, keys.model_key,
        rates.labelled, rates.label_rate,
        top_label.ece, boot.ece_debiased, boot.ece_low, boot.ece_high,
        top_label.mce, top_label.bins,
        prevalence.classwise_ece,
        scores.brier, prevalence.brier_baseline,
        scores.log_loss, prevalence.log_loss_baseline,
        scores.outside_options,
        scores.one_hot_excluded
    from keys
    join int_label_rates as rates using (decision_type, week_start, model_key)
    join scores using (decision_type, week_start, model_key)
    left join top_label using (decision_type, week_start, model_key)
    left join ece_bootstrap as boot using (decision_type, week_start, model_key)
    left join prevalence using (decision_type, week_start, model_key)
)

select * from final

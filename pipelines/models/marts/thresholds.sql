-- Per option, the smallest confidence threshold on the grid whose one-sided Clopper-Pearson lower
-- bound on precision reaches `precision_target`. Family-wise error control: Bonferroni across the
-- decision type's options (alpha / n_options) and fixed-sequence testing down the thresholds (highest
-- first, stop at the first failure), so no correction is spent on the scan. Thresholds that accept fewer
-- decisions than could ever pass (n < ln(alpha') / ln(target), even with every one correct) are skipped:
-- that depends on the confidences only, not on the outcomes, so the tests stay valid given the confidences.
-- Candidates are the grid points where the accepted set changes; a decision is accepted when
-- floor(confidence * grid) >= grid_index.
-- Decisions with one-hot probabilities (`one_hot`) are left out; `coverage` is over all labelled
-- decisions (one-hot ones are never accepted: `int_accepted`).
-- cp_lower(successes, trials, alpha) = Beta(alpha; successes, trials - successes + 1), a UDF (runner.py).
with cube as (
    select * from int_cube_scoped
),

params as (
    select * from run_params
),

counts as (
    select
        decision_type, week_start, week, model_key, proposal as option_id, grid_index,
        max(n_options) as n_options,
        sum(n) as n,
        sum(correct) as correct
    from cube
    where not one_hot  -- a one-hot confidence is always 1: it says nothing about where to accept
    group by all
),

cumulative as (
    select
        *,
        (sum(n) over from_top)::bigint as accepted,
        (sum(correct) over from_top)::bigint as accepted_correct
    from counts
    window from_top as (
        partition by decision_type, week_start, model_key, option_id order by grid_index desc
        rows between unbounded preceding and current row)
),

tested as (
    select
        cumulative.*,
        cp_lower(accepted_correct, accepted, params.alpha / n_options) as precision_lower,
        cp_lower(accepted_correct, accepted, params.alpha / n_options) >= params.precision_target as passes
    from cumulative, params
    where accepted >= ln(params.alpha / n_options) / ln(params.precision_target)
),

options as (
    select decision_type, week_start, week, model_key, option_id, max(n_options) as n_options
    from counts
    group by all
),

first_failure as (
    select decision_type, week_start, model_key, option_id, max(grid_index) filter (where not passes) as failed_at
    from tested
    group by all
),

chosen as (
    select tested.decision_type, tested.week_start, tested.model_key, tested.option_id, min(tested.grid_index) as grid_index
    from tested
    left join first_failure using (decision_type, week_start, model_key, option_id)
    where tested.passes and tested.grid_index > coalesce(first_failure.failed_at, -1)
    group by all
),

final as (
    select
        options.decision_type, options.week_start, options.week, options.model_key, options.option_id,
        chosen.grid_index,
        chosen.grid_index / params.grid as threshold,
        tested.accepted,
        tested.accepted_correct,
        tested.accepted_correct / tested.accepted as "precision",
        tested.precision_lower,
        tested.accepted / rates.labelled as coverage,
        1 - tested.accepted_correct / tested.accepted as selective_risk,
        rates.labelled,
        rates.label_rate,
        params.precision_target,
        params.alpha / options.n_options as alpha_per_option
    from options
    cross join params
    join int_label_rates as rates using (decision_type, week_start, model_key)
    left join chosen using (decision_type, week_start, model_key, option_id)
    left join tested using (decision_type, week_start, model_key, option_id, grid_index)
)

select * from final

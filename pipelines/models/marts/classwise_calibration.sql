-- Classwise calibration per option: the option's probability against "the outcome was this option",
-- in `classwise_bins` equal-width bins (sklearn calibration_curve(strategy="uniform"): bin j holds
-- (j/B, (j+1)/B]). Over labelled decisions whose outcome is one of the declared options.
with labelled as (
    select segment, week_start, outcome_pos, probabilities
    from int_decisions
    where probabilities is not null
),

params as (
    select classwise_bins from run_params
),

classes as (
    select
        segment, week_start, outcome_pos,
        unnest(probabilities) as p,
        generate_subscripts(probabilities, 1) as position
    from labelled
),

per_cell as (  -- ceil(p * B) per probability; the clamp to the bins 0..B-1 is applied to the counts
    select
        classes.segment, classes.week_start, classes.position,
        ceil(classes.p * params.classwise_bins)::int as cell,
        count(*) as n,
        sum(classes.p) as sum_p,
        count(*) filter (where classes.position = classes.outcome_pos) as hits
    from classes, params
    group by all
),

per_segment as (
    select
        per_cell.segment, per_cell.week_start, per_cell.position,
        greatest(0, least(params.classwise_bins - 1, per_cell.cell - 1)) as bin,
        sum(per_cell.n) as n, sum(per_cell.sum_p) as sum_p, sum(per_cell.hits) as hits
    from per_cell, params
    group by all
),

per_model as (
    select
        segments.decision_type, cells.week_start, strftime(cells.week_start, '%G-W%V') as week,
        segments.model_key, segments.option_ids[cells.position] as option_id, cells.bin,
        sum(cells.n)::bigint as n, sum(cells.sum_p) as sum_p, sum(cells.hits) as hits
    from per_segment as cells
    join int_segments as segments using (segment)
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
        sum(n)::bigint as decisions,
        sum(abs(sum_p - hits)) / sum(n) as ece,
        max(abs(sum_p - hits) / n) as mce,
        sum(hits) / sum(n) as prevalence
    from scoped
    group by all
)

select * from final

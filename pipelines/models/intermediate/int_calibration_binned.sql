-- Labelled decisions in their top-label equal-mass bins, per model identity and again under '*', summed per
-- bin and bootstrap block. The bins are those of sklearn's calibration_curve(strategy="quantile"): edges at
-- the linear-interpolated quantiles k/B of the n confidences, bin = number of inner edges strictly below the
-- confidence. Edge k lies strictly below c exactly when c > v_k, the sorted value at the 0-based index
-- m_k = floor(k (n - 1) / B), so the bins need those B - 1 order statistics only, not a sort
-- (`int_calibration_buckets`, `int_calibration_edges`): a row's bin is the number of edges in lower
-- confidence buckets plus those in its own bucket that are below it. The rows are summed per model scope
-- first; their all-models scope (one per model scope) is looked up on those sums.
with labelled as (
    select * from int_calibration_labelled
),

binned as (
    select
        labelled.week_start, labelled.model_scope, labelled.block,
        case when bucket_bins.model_inside is null then bucket_bins.model_below
             else bucket_bins.model_below
                  + len(list_filter(bucket_bins.model_inside, lambda e: e < labelled.confidence)) end as model_bin,
        case when bucket_bins.all_inside is null then bucket_bins.all_below
             else bucket_bins.all_below
                  + len(list_filter(bucket_bins.all_inside, lambda e: e < labelled.confidence)) end as all_bin,
        count(*) as n,
        sum(labelled.confidence) as sum_confidence,
        count(*) filter (where labelled.correct) as correct,
        min(labelled.confidence) as confidence_min,
        max(labelled.confidence) as confidence_max
    from labelled
    join int_calibration_edges as bucket_bins using (week_start, model_scope, bucket)
    group by all
),

scoped as (
    select week_start, model_scope as scope, model_bin as bin, block, sum(n) as n, sum(sum_confidence) as sum_confidence,
        sum(correct) as correct, min(confidence_min) as confidence_min, max(confidence_max) as confidence_max
    from binned
    group by all
    union all
    select binned.week_start, scopes.all_scope, binned.all_bin, binned.block, sum(binned.n),
        sum(binned.sum_confidence), sum(binned.correct), min(binned.confidence_min), max(binned.confidence_max)
    from binned
    join (select distinct model_scope, all_scope from int_segments) as scopes using (model_scope)
    group by all
),

final as (
    select
        scopes.decision_type, scoped.week_start, strftime(scoped.week_start, '%G-W%V') as week, scopes.model_key,
        scoped.bin::integer as bin, scoped.block,
        scoped.n::bigint as decisions, scoped.sum_confidence, scoped.correct::bigint as correct,
        scoped.confidence_min, scoped.confidence_max
    from scoped
    join int_scopes as scopes using (scope)
)

select * from final

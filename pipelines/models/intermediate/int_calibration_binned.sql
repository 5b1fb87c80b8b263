-- Labelled decisions in their top-label equal-mass bins, per model identity and again under '*', summed per
-- bin and bootstrap block. The bins are those of sklearn's calibration_curve(strategy="quantile"): edges at
-- the linear-interpolated quantiles k/B of the n confidences, bin = number of inner edges strictly below the
-- confidence. Edge k lies strictly below c exactly when c > v_k, the sorted value at the 0-based index
-- m_k = floor(k (n - 1) / B), so the bins need those B - 1 order statistics only, not a sort:
-- confidences are counted in 4096 buckets (floor(c * 4096) is monotone in c), the bucket holding index
-- m_k is found from the running counts, and only the rows of those buckets are ranked. A row's bin is the
-- number of edges in lower buckets plus those in its own bucket that are below it.
with labelled as (
    select
        decisions.week_start, segments.model_scope, segments.all_scope,
        decisions.confidence, decisions.correct, decisions.block,
        floor(decisions.confidence * 4096)::integer as bucket
    from int_decisions as decisions
    join int_segments as segments using (segment)
    where decisions.labelled
),

params as (
    select ece_bins from run_params
),

cells as (
    select week_start, model_scope, all_scope, bucket, count(*) as n
    from labelled
    group by all
),

counts as (
    select week_start, model_scope as scope, bucket, sum(n) as n from cells group by all
    union all
    select week_start, all_scope, bucket, sum(n) from cells group by all
),

cumulative as (
    select
        *,
        sum(n) over (partition by week_start, scope order by bucket) - n as below,
        sum(n) over (partition by week_start, scope) as total
    from counts
),

targets as (
    select cumulative.week_start, cumulative.scope, cumulative.bucket, k.k,
        (k.k * (cumulative.total - 1)) // params.ece_bins - cumulative.below as position
    from cumulative
    cross join params
    cross join (select unnest(range(1, ece_bins)) as k from run_params) as k
    where (k.k * (cumulative.total - 1)) // params.ece_bins >= cumulative.below
      and (k.k * (cumulative.total - 1)) // params.ece_bins < cumulative.below + cumulative.n
),

wanted as (
    select distinct week_start, scope, bucket from targets
),

candidates as (
    select labelled.week_start, labelled.model_scope as scope, labelled.bucket, labelled.confidence
    from labelled
    semi join wanted
        on wanted.week_start = labelled.week_start and wanted.scope = labelled.model_scope
        and wanted.bucket = labelled.bucket
    union all
    select labelled.week_start, labelled.all_scope, labelled.bucket, labelled.confidence
    from labelled
    semi join wanted
        on wanted.week_start = labelled.week_start and wanted.scope = labelled.all_scope
        and wanted.bucket = labelled.bucket
),

ranked as (
    select *, row_number() over (partition by week_start, scope, bucket order by confidence) - 1 as position
    from candidates
),

edges as (
    select targets.week_start, targets.scope, targets.bucket, targets.k, ranked.confidence as edge
    from targets
    join ranked using (week_start, scope, bucket, position)
),

marks as (
    select
        keys.week_start, keys.model_scope, keys.bucket,
        count(model_edges.k) filter (where model_edges.bucket < keys.bucket) as model_below,
        list(model_edges.edge) filter (where model_edges.bucket = keys.bucket) as model_inside
    from (select distinct week_start, model_scope, bucket from cells) as keys
    left join edges as model_edges
        on model_edges.week_start = keys.week_start and model_edges.scope = keys.model_scope
    group by all
),

all_marks as (
    select
        keys.week_start, keys.all_scope, keys.bucket,
        count(all_edges.k) filter (where all_edges.bucket < keys.bucket) as all_below,
        list(all_edges.edge) filter (where all_edges.bucket = keys.bucket) as all_inside
    from (select distinct week_start, all_scope, bucket from cells) as keys
    left join edges as all_edges
        on all_edges.week_start = keys.week_start and all_edges.scope = keys.all_scope
    group by all
),

bucket_bins as (
    select cells.week_start, cells.model_scope, cells.all_scope, cells.bucket,
        marks.model_below, marks.model_inside, all_marks.all_below, all_marks.all_inside
    from (select distinct week_start, model_scope, all_scope, bucket from cells) as cells
    join marks using (week_start, model_scope, bucket)
    join all_marks using (week_start, all_scope, bucket)
),

binned as (
    select
        labelled.week_start, labelled.model_scope, labelled.all_scope, labelled.block,
        bucket_bins.model_below
            + coalesce(len(list_filter(bucket_bins.model_inside, lambda e: e < labelled.confidence)), 0) as model_bin,
        bucket_bins.all_below
            + coalesce(len(list_filter(bucket_bins.all_inside, lambda e: e < labelled.confidence)), 0) as all_bin,
        count(*) as n,
        sum(labelled.confidence) as sum_confidence,
        count(*) filter (where labelled.correct) as correct,
        min(labelled.confidence) as confidence_min,
        max(labelled.confidence) as confidence_max
    from labelled
    join bucket_bins using (week_start, model_scope, all_scope, bucket)
    group by all
),

scoped as (
    select week_start, model_scope as scope, model_bin as bin, block, sum(n) as n, sum(sum_confidence) as sum_confidence,
        sum(correct) as correct, min(confidence_min) as confidence_min, max(confidence_max) as confidence_max
    from binned
    group by all
    union all
    select week_start, all_scope, all_bin, block, sum(n), sum(sum_confidence), sum(correct),
        min(confidence_min), max(confidence_max)
    from binned
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

-- The equal-mass bin edges of every scope (per model and '*') as seen from each confidence bucket: how
-- many edges lie in lower buckets and which edge values lie inside it. Edge k of a scope with n labelled
-- decisions is v_k, the sorted confidence at the 0-based index m_k = floor(k (n - 1) / B); the bucket
-- holding m_k is found from the running counts of `int_calibration_buckets`, and only that bucket's
-- rows are ranked to read v_k (read in one pass over the labelled decisions, by week and bucket, for the
-- model and the all-models scopes together).
with params as (
    select ece_bins from run_params
),

scopes as (  -- each model scope's all-models scope
    select distinct model_scope, all_scope from int_segments
),

cells as (
    select buckets.*, scopes.all_scope from int_calibration_buckets as buckets join scopes using (model_scope)
),

counts as (
    select week_start, model_scope as scope, bucket, sum(n)::bigint as n from cells group by all
    union all
    select week_start, all_scope, bucket, sum(n)::bigint from cells group by all
),

cumulative as (
    select
        *,
        (sum(n) over (partition by week_start, scope order by bucket))::bigint - n as below,
        (sum(n) over (partition by week_start, scope))::bigint as total
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

near as (  -- the few labelled decisions in a bucket some scope wants, found in one pass
    select labelled.week_start, labelled.model_scope, labelled.bucket, labelled.confidence
    from int_calibration_labelled as labelled
    semi join (select distinct week_start, bucket from wanted) as wanted_buckets
        on wanted_buckets.week_start = labelled.week_start and wanted_buckets.bucket = labelled.bucket
),

candidates as (
    select near.week_start, near.model_scope as scope, near.bucket, near.confidence
    from near
    semi join wanted
        on wanted.week_start = near.week_start and wanted.scope = near.model_scope and wanted.bucket = near.bucket
    union all
    select near.week_start, scopes.all_scope, near.bucket, near.confidence
    from near
    join scopes using (model_scope)
    semi join wanted
        on wanted.week_start = near.week_start and wanted.scope = scopes.all_scope and wanted.bucket = near.bucket
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

scope_keys as (
    select distinct week_start, model_scope as scope, bucket from cells
    union
    select distinct week_start, all_scope, bucket from cells
),

marks as (  -- per scope (a model's or '*') and bucket: edges in lower buckets, edge values inside it
    select
        keys.week_start, keys.scope, keys.bucket,
        count(edges.k) filter (where edges.bucket < keys.bucket) as below,
        list(edges.edge) filter (where edges.bucket = keys.bucket) as inside
    from scope_keys as keys
    left join edges on edges.week_start = keys.week_start and edges.scope = keys.scope
    group by all
),

final as (
    select keys.week_start, keys.model_scope, keys.bucket,
        model.below as model_below, model.inside as model_inside,
        overall.below as all_below, overall.inside as all_inside
    from (select distinct week_start, model_scope, all_scope, bucket from cells) as keys
    join marks as model
        on model.week_start = keys.week_start and model.scope = keys.model_scope and model.bucket = keys.bucket
    join marks as overall
        on overall.week_start = keys.week_start and overall.scope = keys.all_scope
        and overall.bucket = keys.bucket
)

select * from final

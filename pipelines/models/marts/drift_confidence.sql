-- PSI of each week's confidence distribution against the `reference_weeks` weeks before it, on the
-- reference's quantile bins (deciles by default). Confidences are quantized to 1/psi_resolution; the
-- reference edges are the inverted-CDF quantiles k/B of the quantized values (numpy's
-- method="inverted_cdf"), and a value falls in bin = number of edges strictly below it.
-- PSI = sum over bins of (a - e) * ln(a / e), shares floored at `psi_floor`. `one_hot` decisions are left out.
with scored as (
    select segment, week_start, confidence from int_decisions where is_scored and not one_hot
),

params as (
    select * from run_params
),

per_segment as (
    select
        scored.segment, scored.week_start,
        least(params.psi_resolution - 1, floor(scored.confidence * params.psi_resolution))::int as q,
        count(*) as n
    from scored, params
    group by all
),

per_model as (
    select segments.decision_type, cells.week_start, segments.model_key, cells.q, sum(cells.n)::bigint as n
    from per_segment as cells
    join int_segments as segments using (segment)
    group by all
),

counts as (
    select * from per_model
    union all
    select decision_type, week_start, '*', q, sum(n) from per_model group by all
),

weeks as (
    select distinct decision_type, week_start, model_key from counts
),

reference as (
    select target.decision_type, target.week_start, target.model_key, counts.q, sum(counts.n) as n
    from weeks as target
    join int_reference_window as window_weeks using (decision_type, model_key, week_start)
    join counts
        on counts.decision_type = target.decision_type
        and counts.model_key = target.model_key
        and counts.week_start = window_weeks.reference_week_start
    group by all
),

cumulative as (
    select
        *,
        sum(n) over (partition by decision_type, week_start, model_key order by q) as below_or_at,
        sum(n) over (partition by decision_type, week_start, model_key) as total
    from reference
),

edges as (
    select cumulative.decision_type, cumulative.week_start, cumulative.model_key, k.k, min(cumulative.q) as edge
    from cumulative
    cross join params
    cross join (select unnest(range(1, psi_bins)) as k from run_params) as k
    where cumulative.below_or_at * params.psi_bins >= k.k * cumulative.total
    group by all
),

edge_lists as (
    select decision_type, week_start, model_key, list(edge order by k) as edges
    from edges
    group by all
),

binned as (
    select side, decision_type, week_start, model_key, len(list_filter(edges, lambda e: e < q)) as bin, sum(n) as n
    from (
        select 'current' as side, counts.* from counts
        union all
        select 'reference', decision_type, week_start, model_key, q, n from reference
    )
    join edge_lists using (decision_type, week_start, model_key)
    group by all
),

pivoted as (
    select
        decision_type, week_start, model_key, bin,
        coalesce(sum(n) filter (where side = 'current'), 0) as current,
        coalesce(sum(n) filter (where side = 'reference'), 0) as reference
    from binned
    group by all
),

shares as (
    select
        decision_type, week_start, model_key,
        current / sum(current) over by_target as actual,
        reference / sum(reference) over by_target as expected
    from pivoted
    window by_target as (partition by decision_type, week_start, model_key)
),

reference_weeks as (
    select target.decision_type, target.week_start, target.model_key, count(*) as reference_weeks
    from weeks as target
    join int_reference_window as window_weeks using (decision_type, model_key, week_start)
    join weeks as ref
        on ref.decision_type = target.decision_type
        and ref.model_key = target.model_key
        and ref.week_start = window_weeks.reference_week_start
    group by all
),

psi as (
    select
        decision_type, week_start, model_key,
        sum((greatest(actual, psi_floor) - greatest(expected, psi_floor))
            * ln(greatest(actual, psi_floor) / greatest(expected, psi_floor))) as confidence_psi
    from shares, params
    group by all
),

final as (
    select psi.*, reference_weeks.reference_weeks
    from psi
    join reference_weeks using (decision_type, week_start, model_key)
)

select * from final

-- How long production's outcomes take to arrive, per decision type, week (of the decision) and outcome
-- source: each decision's first outcome report after the decision was received, in hours, under the source
-- that reported first: p50, p90 and p99 (quantile_cont), and the run's configured maturity lag beside the
-- lag the p99 recommends (whole days, rounded up). Audits (`source = 'audit'`) are not outcomes production
-- waits for and are not counted. A week's delays are those known by `as_of`: for recent weeks the slowest
-- outcomes have not arrived yet, so their p99 reads low; the weeks that have matured are the ones to read.
-- Reads `int_decisions` (its `outcome_delay_us` and `outcome_source`, from `stg_outcomes`' one pass over the
-- outcomes; a decision scored by several candidates counts once, from its earliest receipt), the target
-- weeks' only (the reference weeks before them are not written).
with params as (
    select maturity_lag_days from run_params
),

types as (  -- each segment's decision type as a small number (fixed-width group keys below), and whether
            -- the type has several candidates
    select segments.segment, segments.decision_type,
        (dense_rank() over (order by segments.decision_type))::usmallint as type_id,
        candidates.shared
    from int_segments as segments
    join (
        select decision_type, count(distinct coalesce(candidate, '')) > 1 as shared
        from int_segments
        group by decision_type
    ) as candidates using (decision_type)
),

targets as (  -- the first target week: the window's start after its reference weeks
    select read_start::date - to_days(-7 * reference_weeks) as first_week from run_params
),

labelled as not materialized (
    select types.type_id, types.shared, decisions.decision_key, decisions.week_start,
        decisions.outcome_source as source, decisions.outcome_delay_us as delay_us
    from int_decisions as decisions
    join types using (segment)
    where decisions.joined and decisions.week_start >= (select first_week from targets)
),

firsts as (
    -- A decision has one row per candidate (the records' key is type, decision id and candidate): where a
    -- type has several candidates, one per decision, from its earliest receipt; else every row is one.
    -- The source is the decision's first report, the same on each of its rows: a key, not an aggregate.
    select type_id, min(week_start) as week_start, source, max(delay_us) as delay_us
    from labelled
    where shared
    group by type_id, decision_key, source
    union all
    select type_id, week_start, source, delay_us
    from labelled
    where not shared
),

delays as (
    select names.decision_type, firsts.week_start, firsts.source, firsts.delay_us / 3600000000.0 as delay_hours
    from firsts
    join (select distinct type_id, decision_type from types) as names using (type_id)
),

quantiles as (
    select decision_type, week_start, source, count(*) as outcomes,
        quantile_cont(delay_hours, [0.5, 0.9, 0.99]) as q
    from delays
    group by all
),

final as (
    select
        quantiles.decision_type, quantiles.week_start, strftime(quantiles.week_start, '%G-W%V') as week,
        quantiles.source, quantiles.outcomes::bigint as outcomes,
        quantiles.q[1] as p50_hours, quantiles.q[2] as p90_hours, quantiles.q[3] as p99_hours,
        params.maturity_lag_days,
        ceil(greatest(quantiles.q[3], 0) / 24)::double as recommended_lag_days
    from quantiles
    cross join params
)

select * from final

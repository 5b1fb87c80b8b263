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
    select maturity_lag_days, reference_weeks, read_start::date as read_start_day from run_params
),

types as (  -- each segment's decision type as a small number: the per-decision group below has fixed-width keys
    select segment, (dense_rank() over (order by decision_type))::usmallint as type_id, decision_type
    from int_segments
),

firsts as (
    select types.type_id, min(decisions.week_start) as week_start,
        min(decisions.outcome_source) as source,
        max(decisions.outcome_delay_us) as delay_us
    from int_decisions as decisions
    join types using (segment)
    cross join params
    where decisions.joined
        and decisions.week_start - to_days(7 * params.reference_weeks) >= params.read_start_day
    group by types.type_id, decisions.decision_key
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

-- How long outcomes take to arrive, per decision type, week (of the decision) and outcome source: the
-- first report of each decision's outcome (every source, audits included, each on its own) after the
-- decision was received, in hours: p50, p90 and p99 (quantile_cont), and the run's configured maturity
-- lag beside the lag the p99 recommends (whole days, rounded up). A week's delays are those known by
-- `as_of`: for recent weeks the slowest outcomes have not arrived yet, so their p99 reads low; the weeks
-- that have matured are the ones to read. Reads `raw_outcomes` (the staging views keep one outcome per
-- decision and drop its source) and `int_decisions` (decisions paired by the hash of their id), the target
-- weeks' only (the reference weeks before them are not written).
with params as (
    select maturity_lag_days, reference_weeks, read_start::date as read_start_day from run_params
),

reports as (
    select hash(decision_id) as decision_key, decision_type, coalesce(source, '') as source,
        min(outcome_at) as first_at
    from raw_outcomes
    where outcome_at <= getvariable('as_of') and outcome_at >= getvariable('read_start')
    group by all
),

decisions as (
    select segments.decision_type, decisions.decision_key, min(decisions.week_start) as week_start,
        min(decisions.received_at) as received_at
    from int_decisions as decisions
    join int_segments as segments using (segment)
    cross join params
    where decisions.joined
        and decisions.week_start - to_days(7 * params.reference_weeks) >= params.read_start_day
    group by all
),

delays as (
    select decisions.decision_type, decisions.week_start, reports.source,
        (epoch_us(reports.first_at) - epoch_us(decisions.received_at)) / 3600000000.0 as delay_hours
    from reports
    join decisions
        on decisions.decision_key = reports.decision_key and decisions.decision_type = reports.decision_type
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

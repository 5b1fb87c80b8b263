-- The outcome of each decision as known at `as_of`: a repeated outcome keeps the latest `outcome_at`
-- (ties broken by the outcome id, so reruns agree). The order is one 128-bit key per report
-- (microseconds, then the outcome's rank among the window's outcome ids), so the aggregate keeps a
-- scalar per decision rather than a struct.
with source as (
    select * from raw_outcomes
),

params as (
    select * from run_params
),

known as not materialized (
    select source.decision_id, source.outcome, source.outcome_at
    from source, params
    where source.outcome_at <= params.as_of
      and source.outcome_at >= params.read_start
),

names as (
    select list(distinct outcome order by outcome) as sorted from known
),

latest as (
    select
        known.decision_id,
        arg_max(known.outcome, epoch_us(known.outcome_at)::hugeint * 4294967296
                               + list_position(names.sorted, known.outcome)) as outcome,
        max(known.outcome_at) as outcome_at,
        count(*) as reports
    from known, names
    group by known.decision_id
),

final as (
    select * from latest
)

select * from final

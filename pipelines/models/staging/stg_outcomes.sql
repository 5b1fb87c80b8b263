-- The outcome of each decision as known at `as_of`: a repeated outcome keeps the latest `outcome_at`
-- (ties broken by the outcome id, so reruns agree).
with source as (
    select * from raw_outcomes
),

params as (
    select * from run_params
),

known as (
    select source.decision_id, source.outcome, source.outcome_at
    from source, params
    where source.outcome_at <= params.as_of
      and source.outcome_at >= params.read_start
),

latest as (
    select
        decision_id,
        max_by(outcome, (outcome_at, outcome)) as outcome,
        max(outcome_at) as outcome_at,
        count(*) as reports
    from known
    group by decision_id
),

final as (
    select * from latest
)

select * from final

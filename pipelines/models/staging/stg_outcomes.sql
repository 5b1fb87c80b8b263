-- The outcome of each decision as known at `as_of`: a repeated outcome keeps the latest `outcome_at`
-- (ties broken by the outcome id: the greatest wins, so reruns agree), in one grouped pass: the largest
-- (time, outcome) pair of each decision. The same pass keeps the decision's first report (`first_at`) and
-- its source (`first_source`; the same instant from two sources: the first by name), the smallest (time,
-- source) pair, for `label_delay`.
-- The window's bounds are the variables `read_start` and `as_of`: constants, so the scan filters as it reads.
-- Production's outcome only: audits (`source = 'audit'`, records v1.2) are people's answers about what was
-- right and never replace it (`stg_audits` reads them); every agreement metric compares with this one.
with source as (
    select * from raw_outcomes
),

known as (
    select source.decision_id, source.outcome, source.outcome_at, coalesce(source.source, '') as source
    from source
    where source.outcome_at <= getvariable('as_of')
      and source.outcome_at >= getvariable('read_start')
      and source.source is distinct from 'audit'
),

latest as (
    select
        decision_id,
        max({'at': outcome_at, 'outcome': outcome}) as last_report,
        min({'at': outcome_at, 'source': source}) as first_report
    from known
    group by decision_id
),

final as (
    select
        decision_id,
        last_report.outcome as outcome,
        last_report.at as outcome_at,
        first_report.at as first_at,
        first_report.source as first_source
    from latest
)

select * from final

-- The outcome of each decision as known at `as_of`: a repeated outcome keeps the latest `outcome_at`
-- (ties broken by the outcome id, so reruns agree). Each report gets one bigint order key, microseconds
-- since `read_start` times the number of distinct outcome ids plus the outcome's rank among them, so the
-- aggregate is a plain `max` and the outcome and its time are read back from the key. (The key overflows,
-- and the model fails loudly, only past 2^63: e.g. 290,000 distinct outcome ids in a one-year window.)
-- The window's bounds are the variables `read_start` and `as_of`: constants, so the scan filters as it reads.
-- The same pass keeps the decision's first report (`first_at`) and its source (`first_source`; the same
-- instant from two sources: the first by name), encoded the same way, for `label_delay`.
-- Production's outcome only: audits (`source = 'audit'`, records v1.2) are people's answers about what was
-- right and never replace it (`stg_audits` reads them); every agreement metric compares with this one.
with source as (
    select * from raw_outcomes
),

known as not materialized (
    select source.decision_id, source.outcome, source.outcome_at, coalesce(source.source, '') as source
    from source
    where source.outcome_at <= getvariable('as_of')
      and source.outcome_at >= getvariable('read_start')
      and source.source is distinct from 'audit'
),

names as (
    select list(distinct outcome order by outcome) as sorted, count(distinct outcome) as n,
        list(distinct source order by source) as sources, count(distinct source) as sources_n
    from known
),

latest as (
    select
        known.decision_id,
        max((epoch_us(known.outcome_at) - epoch_us(getvariable('read_start'))) * names.n
            + list_position(names.sorted, known.outcome) - 1) as order_key,
        min((epoch_us(known.outcome_at) - epoch_us(getvariable('read_start'))) * names.sources_n
            + list_position(names.sources, known.source) - 1) as first_key
    from known, names
    group by known.decision_id
),

final as (
    select
        latest.decision_id,
        names.sorted[latest.order_key % names.n + 1] as outcome,
        make_timestamptz(epoch_us(getvariable('read_start')) + latest.order_key // names.n) as outcome_at,
        make_timestamptz(epoch_us(getvariable('read_start')) + latest.first_key // names.sources_n) as first_at,
        names.sources[latest.first_key % names.sources_n + 1] as first_source
    from latest, names
)

select * from final

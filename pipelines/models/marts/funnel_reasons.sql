-- Decisions offered but not scored, by status and reason (reason '' where none was recorded), with the
-- decisions the sidecar counted in its drop summaries (`stg_drops`) as status `dropped`.
with decisions as (
    select * from int_decisions where not is_scored
),

per_segment as (
    select segment, week_start, count(*) as decisions
    from decisions
    group by all
),

rows_and_drops as (
    select segments.decision_type, cells.week_start, segments.status, segments.reason, cells.decisions
    from per_segment as cells
    join int_segments as segments using (segment)
    union all
    select decision_type, week_start, 'dropped' as status, reason, dropped as decisions
    from stg_drops
),

final as (
    select
        decision_type, week_start, strftime(week_start, '%G-W%V') as week,
        status, reason, sum(decisions)::bigint as decisions
    from rows_and_drops
    group by all
)

select * from final

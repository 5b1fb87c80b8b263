-- Decisions offered but not scored, by status and reason (reason '' where none was recorded).
with decisions as (
    select * from int_decisions where not is_scored
),

per_segment as (
    select segment, week_start, count(*) as decisions
    from decisions
    group by all
),

final as (
    select
        segments.decision_type, cells.week_start, strftime(cells.week_start, '%G-W%V') as week,
        segments.status, segments.reason, sum(cells.decisions)::bigint as decisions
    from per_segment as cells
    join int_segments as segments using (segment)
    group by all
)

select * from final

-- Decisions offered but not scored, by status and reason (reason '' where none was recorded).
with decisions as (
    select * from int_decisions where not is_scored
),

final as (
    select decision_type, week_start, week, status, reason, count(*) as decisions
    from decisions
    group by all
)

select * from final

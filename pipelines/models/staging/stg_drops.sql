-- Decisions the sidecar dropped before accepting them, counted instead of written one proposals row each
-- (records v1.1 `drops`, docs/records.md): summed per decision type, candidate, ISO week and reason, since
-- one (writer, minute, reason) may have several rows. Reads the registered raw relation `raw_drops`.
-- The window's bounds are the variables `read_start` and `read_end`, as for the proposals.
with final as (
    select
        decision_type,
        coalesce(candidate, 'default') as candidate,
        date_trunc('week', make_timestamp(epoch_us(minute)))::date as week_start,  -- UTC, without ICU
        reason,
        sum(dropped)::bigint as dropped
    from raw_drops
    where minute >= getvariable('read_start') and minute < getvariable('read_end')
    group by all
)

select * from final

-- The offered decisions counted per segment and UTC hour, with their first and last instants, scorer time
-- and prompt tokens. A segment is the decision type, status and reason, candidate, model identity (its
-- sha256 and, for v1 rows, name, sha and quantization), normalization, fleet and option list; each decision
-- carries only its 64-bit hash (`int_decisions.segment`), and `int_segments` names it. Weeks
-- (`int_segment_weeks`) and the latency mart's busiest hour are summed from here.
-- The counts are summed from `int_decisions` (integer keys, no strings). The strings of each segment are
-- decoded from the proposals only at its first decision: the join's few instants filter the scan on
-- `received_at`, so the option lists and strings of the other rows are never read again. Two string sets
-- under one hash that meet there give two rows per segment in `int_segments`, and a segment whose strings
-- were not found leaves its decisions uncounted: the runner refuses both (`runner.check_segments`).
with decisions as (
    select * from int_decisions
),

cells as (
    select
        segment,
        epoch_us(received_at) // 3600000000 as hour,
        min(received_at) as first_at,
        max(received_at) as last_at,
        count(*) as offered,
        sum(scorer_ms) as sum_scorer_ms,
        sum(prompt_tokens) as prompt_tokens,
        sum(cached_tokens) as cached_tokens
    from decisions
    group by all
),

firsts as (
    select segment, min(first_at) as first_at
    from cells
    group by all
),

named as (
    select distinct
        hash(decision_type, status, reason, candidate, model_identity_sha256, normalization, model_name,
             model_sha256, quantization, backend, device, instance_type, option_ids) as segment,
        decision_type, status, reason, candidate, model_identity_sha256, normalization, model_name,
        model_sha256, quantization, backend, device, instance_type, option_ids
    from stg_proposals as proposals
    semi join firsts on proposals.received_at = firsts.first_at
),

final as (
    select
        cells.segment,
        named.decision_type, named.status, named.reason, named.candidate, named.model_identity_sha256,
        named.normalization, named.model_name, named.model_sha256, named.quantization, named.backend,
        named.device, named.instance_type, cells.hour,
        date_trunc('week', make_timestamp(cells.hour * 3600000000))::date as week_start,  -- UTC, without ICU
        named.option_ids, cells.first_at, cells.last_at, cells.offered, cells.sum_scorer_ms, cells.prompt_tokens,
        cells.cached_tokens
    from cells
    join named using (segment)
)

select * from final

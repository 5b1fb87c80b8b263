-- The offered decisions counted per segment and UTC hour, with their scorer time and prompt tokens: the
-- one pass over the proposals' strings. A segment is the decision type, status and reason, candidate,
-- model identity (its sha256 and, for v1 rows, name, sha and quantization), normalization, fleet and option list; each decision carries only its 64-bit hash (`int_decisions.segment`),
-- and `int_segments` names it. Weeks (`int_segment_weeks`) and the latency mart's busiest hour are summed
-- from here, so no other model reads the proposals for them. The strings are grouped as they are (DuckDB
-- groups the Parquet dictionaries cheaply) with the option list's hash; the segment hash is computed once
-- per group, the same function `int_decisions` computes per decision.
with proposals as (
    select * from stg_proposals
),

cells as (
    select
        decision_type, status, reason, candidate, model_identity_sha256, normalization, model_name,
        model_sha256, quantization, backend, device, instance_type, hash(option_ids) as options_hash,
        epoch_us(received_at) // 3600000000 as hour,
        any_value(option_ids) as option_ids,
        min(received_at) as first_at,
        max(received_at) as last_at,
        count(*) as offered,
        sum(scorer_ms) as sum_scorer_ms,
        sum(prompt_tokens) as prompt_tokens,
        sum(cached_tokens) as cached_tokens
    from proposals
    group by all
),

final as (
    select
        hash(decision_type, status, reason, candidate, model_identity_sha256, normalization, model_name,
             model_sha256, quantization, backend, device, instance_type, option_ids) as segment,
        decision_type, status, reason, candidate, model_identity_sha256, normalization, model_name, model_sha256, quantization, backend, device, instance_type, hour,
        date_trunc('week', make_timestamp(hour * 3600000000))::date as week_start,  -- UTC, without ICU
        option_ids, first_at, last_at, offered, sum_scorer_ms, prompt_tokens, cached_tokens
    from cells
)

select * from final

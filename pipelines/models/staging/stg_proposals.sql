-- One row per offered decision in the read window (target weeks plus the drift reference weeks),
-- with the Monday of its ISO week, its candidate and model identity (v1.1; null in v1 files), and
-- `one_hot` where the probabilities are one-hot rather than the model's (left out of calibration). Reads the registered raw relation `raw_proposals`.
-- The week label (`2026-W48`) is added after aggregation, never per decision. The window's bounds are the
-- variables `read_start` and `read_end`: constants, so the scan filters as it reads.
with source as (
    select * from raw_proposals
),

in_window as (
    select source.*
    from source
    where source.received_at >= getvariable('read_start')
      and source.received_at < getvariable('read_end')
),

final as (
    select
        decision_id,
        decision_type,
        received_at,
        date_trunc('week', make_timestamp(epoch_us(received_at)))::date as week_start,  -- UTC, without ICU
        sampled,
        status,
        coalesce(reason, '') as reason,
        option_ids,
        probabilities,
        proposal,
        proposal_probability as confidence,
        -- no log-probabilities behind the probabilities (the chat backend's `chat/2;<mode>;one_hot`)
        coalesce(prompt_builder like '%;one_hot', false) as one_hot,
        backend,
        device,
        instance_type,
        model_name,
        model_sha256,
        quantization,
        candidate,
        normalization,
        model_identity,
        model_identity_sha256,
        scorer_ms,
        total_ms,
        prompt_tokens,
        cached_tokens,
        state
    from in_window
)

select * from final

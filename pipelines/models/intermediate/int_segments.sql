-- The distinct segments of the offered decisions (from `int_segment_hours`): decision type, status and
-- reason, candidate, model identity, fleet and option list. Each decision carries only its segment's 64-bit
-- hash (`int_decisions.segment`); every string lives here once.
-- `model_key` is the group every quality mart reports by: one per candidate and model identity
-- (`model_identity_sha256`), readable as `<candidate> <model>/<quant>/<device>/<normalization> #<sha12>`
-- (sha12 = the identity's sha256, first 12 hex). v1 rows (no identity) fall back to the v1 key
-- `<model>@<model sha256, 12>/<quant>`. Scope ids for the per-row metrics: `model_scope` (type x model_key),
-- `all_scope` (type, all models: '*'; negative) and `fleet_scope` (type x backend x device x instance type).
-- The runner checks that no two segments share a hash (exactly for the scalar columns; option lists are
-- told apart by the hash alone).
with segment_hours as (
    select * from int_segment_hours
),

distinct_segments as (
    select
        segment, decision_type, status, reason, candidate, model_identity_sha256, normalization, model_name,
        model_sha256, quantization, backend, device, instance_type,
        any_value(option_ids) as option_ids
    from segment_hours
    group by all
),

keyed as (
    select
        *,
        case
            when model_identity_sha256 is null
                then model_name || '@' || left(model_sha256, 12) || '/' || coalesce(quantization, '')
            else coalesce(candidate, '') || ' ' || coalesce(model_name, '') || '/' || coalesce(quantization, '')
                || '/' || coalesce(device, '') || '/' || coalesce(normalization, '') || ' #'
                || left(model_identity_sha256, 12)
        end as model_key
    from distinct_segments
),

final as (
    select
        segment,
        decision_type,
        status,
        reason,
        status = 'scored' as is_scored,
        model_key,
        candidate,
        model_identity_sha256,
        normalization,
        model_name,
        quantization,
        backend,
        device,
        instance_type,
        option_ids,
        len(option_ids)::utinyint as n_options,
        dense_rank() over (order by decision_type, model_key)::integer as model_scope,
        -dense_rank() over (order by decision_type)::integer as all_scope,
        dense_rank() over (order by decision_type, backend, device, instance_type)::integer as fleet_scope
    from keyed
)

select * from final

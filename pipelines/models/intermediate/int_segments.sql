-- The distinct segments of the offered decisions (from `int_segment_hours`): decision type, status and
-- reason, model identity, fleet and option list. Each decision carries only its segment's 64-bit hash
-- (`int_decisions.segment`); every string lives here once. Scope ids for the per-row metrics: `model_scope` (type x model identity),
-- `all_scope` (type, all models: '*'; negative) and `fleet_scope` (type x backend x device x instance type).
-- The runner checks that no two segments share a hash (exactly for the scalar columns; option lists are
-- told apart by the hash alone).
with segment_hours as (
    select * from int_segment_hours
),

distinct_segments as (
    select
        segment, decision_type, status, reason, model_name, model_sha256, quantization, backend, device,
        instance_type,
        any_value(option_ids) as option_ids
    from segment_hours
    group by all
),

final as (
    select
        segment,
        decision_type,
        status,
        reason,
        status = 'scored' as is_scored,
        model_name || '@' || left(model_sha256, 12) || '/' || coalesce(quantization, '') as model_key,
        model_name,
        backend,
        device,
        instance_type,
        option_ids,
        len(option_ids)::utinyint as n_options,
        dense_rank() over (order by decision_type, model_name || '@' || left(model_sha256, 12) || '/'
                           || coalesce(quantization, ''))::integer as model_scope,
        -dense_rank() over (order by decision_type)::integer as all_scope,
        dense_rank() over (order by decision_type, backend, device, instance_type)::integer as fleet_scope
    from distinct_segments
)

select * from final

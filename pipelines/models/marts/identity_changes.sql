-- Every change of a candidate's model identity in the read window, field by field. Identities are compared
-- within a candidate and fleet (backend, device, instance type: a candidate may run CPU and GPU pools side
-- by side, each with its own identity). An identity first seen at least `identity_settle_minutes` after the
-- first decision of its candidate and fleet in the window is a change (identities present from the start
-- run side by side, they did not replace each other); it is compared with the nearest identity seen before
-- it there (fewest changed fields, then the one seen last). One row per changed field of the identity's
-- canonical JSON (`model.kv_type`, `normalization`, `prompt.template_sha256`...; `identity_diff` flattens
-- objects to dotted paths, values as JSON text). `changed_at` is the first decision scored under the new
-- identity, `previous_last_seen` the last one under the old; the week is that of `changed_at`.
with params as (
    select identity_settle_minutes from run_params
),

hours as (
    select * from int_segment_hours where status = 'scored' and model_identity_sha256 is not null
),

seen as (
    select
        decision_type, candidate, backend, device, instance_type, model_identity_sha256,
        min(first_at) as first_seen,
        max(last_at) as last_seen
    from hours
    group by all
),

texts as (  -- the identity JSON read only at each identity's first decision: the long strings are never
            -- decoded for the other rows (the join's few keys filter the scan on `received_at` first)
    select raw.model_identity_sha256, any_value(raw.model_identity) as model_identity
    from raw_proposals as raw
    semi join seen
        on raw.received_at = seen.first_seen and raw.model_identity_sha256 = seen.model_identity_sha256
    group by all
),

identities as (
    select
        seen.*,
        texts.model_identity,
        min(seen.first_seen) over (partition by decision_type, candidate, backend, device, instance_type)
            as fleet_first_seen
    from seen
    join texts using (model_identity_sha256)
),

newcomers as (
    select identities.*
    from identities, params
    where first_seen >= fleet_first_seen + to_minutes(params.identity_settle_minutes)
),

nearest as (
    select
        newcomers.decision_type, newcomers.candidate, newcomers.first_seen,
        newcomers.model_identity_sha256, earlier.model_identity_sha256 as previous_sha256,
        earlier.last_seen as previous_last_seen,
        identity_diff(earlier.model_identity, newcomers.model_identity) as diff
    from newcomers
    join identities as earlier
        on earlier.decision_type = newcomers.decision_type and earlier.candidate = newcomers.candidate
        and earlier.backend is not distinct from newcomers.backend
        and earlier.device is not distinct from newcomers.device
        and earlier.instance_type is not distinct from newcomers.instance_type
        and earlier.first_seen < newcomers.first_seen
    qualify row_number() over (
        partition by newcomers.decision_type, newcomers.candidate, newcomers.model_identity_sha256
        order by len(diff), earlier.last_seen desc, earlier.model_identity_sha256
    ) = 1
),

changes as (
    select *, unnest(diff) as field_diff from nearest
),

final as (
    select
        decision_type,
        date_trunc('week', make_timestamp(epoch_us(first_seen)))::date as week_start,
        strftime(date_trunc('week', make_timestamp(epoch_us(first_seen))), '%G-W%V') as week,
        candidate,
        first_seen as changed_at,
        previous_last_seen,
        previous_sha256 as from_identity_sha256,
        model_identity_sha256 as to_identity_sha256,
        field_diff.field as field,
        field_diff.before as before,
        field_diff.after as after
    from changes
)

select * from final

-- The model identities scored per decision type, week and candidate: one row per `model_key` (candidate x
-- `model_identity_sha256`; v1 rows: the v1 key, null candidate and identity), naming it, with when it was
-- first and last seen that week and how many decisions it scored. `candidate_identities` > 1 says the
-- candidate's identity changed within the week: its quality metrics are reported per identity, never mixed
-- (`identity_changes` says what changed).
with hours as (
    select * from int_segment_hours where status = 'scored'
),

per_key as (
    select
        segments.decision_type, hours.week_start, segments.model_key,
        min(segments.candidate) as candidate,
        min(segments.model_identity_sha256) as model_identity_sha256,
        min(segments.model_name) as model_name,
        min(segments.quantization) as quantization,
        min(segments.device) as device,
        min(segments.normalization) as normalization,
        min(hours.first_at) as first_seen,
        max(hours.last_at) as last_seen,
        sum(hours.offered)::bigint as scored
    from hours
    join int_segments as segments using (segment)
    group by all
),

final as (
    select
        decision_type, week_start, strftime(week_start, '%G-W%V') as week, model_key, candidate,
        model_identity_sha256, model_name, quantization, device, normalization, first_seen, last_seen, scored,
        count(*) over (partition by decision_type, week_start, coalesce(candidate, model_key))::bigint
            as candidate_identities
    from per_key
)

select * from final

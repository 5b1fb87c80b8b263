-- The audit samples of the window's weeks (`semif-shadow audit sample`; `contracts/audit_samples.py`):
-- one row per sampled decision with its stratum, the stratum's size when drawn and its inclusion
-- probability. Reads the registered raw relation `raw_audit_samples` (empty when no sample was drawn).
with source as (
    select * from raw_audit_samples
),

final as (
    select
        sample_id, decision_type, decision_id, week, stratum, inclusion_probability, double_audit,
        stratum_decisions
    from source
)

select * from final

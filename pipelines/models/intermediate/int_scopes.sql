-- Names of the scope ids in `int_segments`: per model identity (`model_scope`) and all models ('*',
-- `all_scope`), each with its decision type and model key.
with segments as (
    select * from int_segments
),

final as (
    select distinct model_scope as scope, decision_type, model_key from segments where model_key is not null
    union all
    select distinct all_scope, decision_type, '*' from segments
)

select * from final

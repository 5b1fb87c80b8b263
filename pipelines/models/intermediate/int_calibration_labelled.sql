-- Labelled decisions (not `one_hot`) with what the top-label equal-mass bins need: week, model scope,
-- confidence, whether the proposal was right, bootstrap block and confidence bucket floor(c * 4096)
-- (monotone in c). Materialized once for `int_calibration_buckets`, `_edges` and `_binned`. The all-models
-- scope is a function of the model scope (one decision type each): the three models map it from
-- `int_segments` on their small tables instead of carrying it per decision.
with decisions as (
    select * from int_decisions where labelled and not one_hot  -- one-hot rows say nothing about calibration
),

final as (
    select
        decisions.week_start, segments.model_scope,
        decisions.confidence, decisions.correct, decisions.block,
        floor(decisions.confidence * 4096)::integer as bucket
    from decisions
    join int_segments as segments using (segment)
)

select * from final

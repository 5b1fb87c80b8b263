-- Labelled decisions counted per model scope and confidence bucket floor(c * 4096) (monotone in c): the
-- running counts that locate the equal-mass bin edges (`int_calibration_edges`).
with labelled as (
    select
        decisions.week_start, segments.model_scope, segments.all_scope,
        decisions.confidence, decisions.correct, decisions.block,
        floor(decisions.confidence * 4096)::integer as bucket
    from int_decisions as decisions
    join int_segments as segments using (segment)
    where decisions.labelled
),

final as (
    select week_start, model_scope, all_scope, bucket, count(*) as n
    from labelled
    group by all
)

select * from final

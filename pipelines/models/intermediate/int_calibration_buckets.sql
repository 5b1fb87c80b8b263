-- Labelled decisions counted per model scope and confidence bucket floor(c * 4096) (monotone in c): the
-- running counts that locate the equal-mass bin edges (`int_calibration_edges`).
with labelled as (
    select * from int_calibration_labelled
),

final as (
    select week_start, model_scope, bucket, count(*) as n
    from labelled
    group by all
)

select * from final

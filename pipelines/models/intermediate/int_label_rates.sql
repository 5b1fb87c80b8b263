-- Scored and labelled decisions per decision type, week and model identity ('*': all models): the
-- label rate that every mart shows beside its metric.
with cube as (
    select * from int_cube
),

per_model as (
    select
        decision_type, week_start, week, model_key,
        sum(n)::bigint as scored,
        (sum(n) filter (where labelled))::bigint as labelled
    from cube
    group by all
),

all_models as (
    select decision_type, week_start, week, '*' as model_key, sum(scored)::bigint as scored,
        sum(labelled)::bigint as labelled
    from per_model
    group by all
),

final as (
    select *, coalesce(labelled, 0) / nullif(scored, 0) as label_rate
    from (select * from per_model union all select * from all_models)
)

select * from final

-- Each week and the weeks of its drift reference window: the `reference_weeks` weeks before it (the week
-- itself left out), per decision type and model key (and '*', every model), over the weeks with scored
-- decisions. The drift models join their own weekly numbers to these pairs: the window is written once.
with weeks as (
    select distinct decision_type, week_start, model_key from int_cube
    union
    select distinct decision_type, week_start, '*' from int_cube
),

params as (
    select reference_weeks from run_params
),

final as (
    select target.decision_type, target.model_key, target.week_start, ref.week_start as reference_week_start
    from weeks as target
    cross join params
    join weeks as ref
        on ref.decision_type = target.decision_type
        and ref.model_key = target.model_key
        and ref.week_start < target.week_start
        and ref.week_start >= target.week_start - to_days(7 * params.reference_weeks)
)

select * from final

-- `int_cube` with whether each cell is accepted by its model's per-option threshold (mart `thresholds`);
-- scored decisions that are not accepted are routed to review, and so is every `one_hot` decision (it has no
-- probability to hold against a threshold). Feeds `selective` and `cost`.
with cube as (
    select * from int_cube
),

chosen as (
    select decision_type, week_start, model_key, option_id, grid_index
    from thresholds
    where model_key <> '*' and grid_index is not null
),

final as (
    select
        cube.*,
        not cube.one_hot and coalesce(cube.grid_index >= chosen.grid_index, false) as accepted
    from cube
    left join chosen
        on chosen.decision_type = cube.decision_type
        and chosen.week_start = cube.week_start
        and chosen.model_key = cube.model_key
        and chosen.option_id = cube.proposal
)

select * from final

-- What a policy would have done on one week: the decisions of its decision type scored under its model key,
-- each accepted when its proposal has a threshold and floor(confidence x grid) >= the threshold's grid index
-- (the `thresholds` rule) and its probabilities are not one-hot (as `int_accepted` and the `evidence` mart
-- count: a one-hot confidence is always 1), else sent to the abstain action. Reads `cfg_policy` (option_id, grid_index),
-- `int_decisions`, `int_segments` and `int_segment_week_cost`, after a run over that week.
-- Parameters: $decision_type, $week, $model_key. Cost: the key's scoring that week (`int_segment_week_cost`)
-- per accepted decision. Severe errors: accepted, labelled, wrong, proposing a high-consequence option.
with params as (
    select grid from run_params
),

segments as (
    select * from int_segments where decision_type = $decision_type and model_key = $model_key and is_scored
),

decisions as (
    select
        decisions.labelled, decisions.correct, segments.option_ids[decisions.proposal_pos] as proposal,
        not decisions.one_hot
            and coalesce(floor(decisions.confidence * params.grid)::int >= policy.grid_index, false) as accepted
    from int_decisions as decisions
    join segments using (segment)
    cross join params
    left join cfg_policy as policy on policy.option_id = segments.option_ids[decisions.proposal_pos]
    where strftime(decisions.week_start, '%G-W%V') = $week
),

counted as (
    select
        count(*)::bigint as scored,
        count(*) filter (where accepted)::bigint as accepted,
        count(*) filter (where accepted and labelled)::bigint as accepted_labelled,
        count(*) filter (where accepted and labelled and correct)::bigint as accepted_correct,
        count(*) filter (
            where accepted and labelled and not correct
            and proposal in (select option_id from cfg_high_consequence where decision_type = $decision_type)
        )::bigint as severe_errors
    from decisions
),

spent as (
    select sum(weeks.cost_usd) as cost_usd
    from int_segment_week_cost as weeks
    join segments using (segment)
    where strftime(weeks.week_start, '%G-W%V') = $week
),

final as (
    select
        counted.*,
        counted.scored - counted.accepted as sent_to_review,
        counted.accepted / nullif(counted.scored, 0) as coverage,
        counted.accepted_correct / nullif(counted.accepted_labelled, 0) as precision,
        spent.cost_usd,
        spent.cost_usd / nullif(counted.accepted, 0) as cost_per_accepted
    from counted, spent
)

select * from final

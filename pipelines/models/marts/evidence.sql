-- The week's evidence at each policy, per decision type, week and model key: the week's own per-option
-- thresholds (policy `none`, as `int_accepted` accepts) and every policy file given to the run
-- (`cfg_policies`: a decision is accepted when its probabilities are not one-hot and floor(confidence x
-- grid) >= its proposal's grid index, the `thresholds` rule; an option without a grid index never is).
-- One definition of each count, used by every rule of the review: scored, accepted (coverage = accepted /
-- scored), labelled, accepted_labelled, accepted_correct (precision = accepted_correct / accepted_labelled)
-- and severe_errors (accepted, labelled and wrong, proposing a high-consequence option: acted on).
-- Beside them, the labelled and unlabelled scored decisions' confidence (mean and sd on the confidence grid,
-- one-hot rows left out), for the review's check that the labels are not a skewed sample.
-- The ledger's columns (cumulative mature counts, bounds, resets) are not here: `pipelines/ledger.py` adds
-- and fills them when the marts are written.
with cube as (
    select * from int_cube
),

params as (
    select grid from run_params
),

names as (
    select decision_type, model_key, min(candidate) as candidate
    from int_segments
    where is_scored
    group by all
),

policy_keys as (
    select distinct decision_type, model_key, policy from cfg_policies
),

own_thresholds as (
    select decision_type, week_start, model_key, 'none' as policy, proposal, labelled, accepted, n, correct
    from int_accepted
),

policy_files as (
    select
        cube.decision_type, cube.week_start, cube.model_key, keys.policy, cube.proposal, cube.labelled,
        not cube.one_hot and coalesce(cube.grid_index >= rules.grid_index, false) as accepted,
        cube.n, cube.correct
    from cube
    join policy_keys as keys on keys.decision_type = cube.decision_type and keys.model_key = cube.model_key
    left join cfg_policies as rules on rules.policy = keys.policy and rules.option_id = cube.proposal
),

at_policy as (
    select * from own_thresholds
    union all
    select * from policy_files
),

counted as (
    select
        at_policy.decision_type, at_policy.week_start, at_policy.model_key, at_policy.policy,
        sum(at_policy.n)::bigint as scored,
        coalesce(sum(at_policy.n) filter (where at_policy.accepted), 0)::bigint as accepted,
        coalesce(sum(at_policy.n) filter (where at_policy.labelled), 0)::bigint as labelled,
        coalesce(sum(at_policy.n) filter (where at_policy.accepted and at_policy.labelled), 0)::bigint
            as accepted_labelled,
        coalesce(sum(at_policy.correct) filter (where at_policy.accepted and at_policy.labelled), 0)::bigint
            as accepted_correct,
        coalesce(sum(at_policy.n - at_policy.correct) filter (
            where at_policy.accepted and at_policy.labelled and catalog.option_id is not null), 0)::bigint
            as severe_errors
    from at_policy
    left join cfg_high_consequence as catalog
        on catalog.decision_type = at_policy.decision_type and catalog.option_id = at_policy.proposal
    group by all
),

moments as (  -- on the confidence grid (floor(confidence x grid) / grid)
    select
        cube.decision_type, cube.week_start, cube.model_key, cube.labelled,
        sum(cube.n) as n,
        sum(cube.n * cube.grid_index) / sum(cube.n) / max(params.grid) as mean,
        sum(cube.n * cube.grid_index * cube.grid_index) / sum(cube.n) / max(params.grid) / max(params.grid)
            as square
    from cube, params
    where not cube.one_hot
    group by all
),

shift as (
    select
        decision_type, week_start, model_key,
        coalesce(max(n) filter (where not labelled), 0)::bigint as unlabelled,
        max(mean) filter (where labelled) as labelled_confidence_mean,
        max(sqrt(greatest(square - mean * mean, 0))) filter (where labelled) as labelled_confidence_sd,
        max(mean) filter (where not labelled) as unlabelled_confidence_mean,
        max(sqrt(greatest(square - mean * mean, 0))) filter (where not labelled) as unlabelled_confidence_sd
    from moments
    group by all
),

final as (
    select
        counted.decision_type, counted.week_start, strftime(counted.week_start, '%G-W%V') as week,
        counted.model_key, names.candidate, counted.policy,
        counted.scored, counted.accepted, counted.accepted_labelled, counted.accepted_correct,
        counted.severe_errors, counted.labelled, coalesce(shift.unlabelled, 0)::bigint as unlabelled,
        shift.labelled_confidence_mean, shift.labelled_confidence_sd,
        shift.unlabelled_confidence_mean, shift.unlabelled_confidence_sd
    from counted
    left join names using (decision_type, model_key)
    left join shift using (decision_type, week_start, model_key)
)

select * from final

-- Shift of the proposal mix (scored decisions) and of the outcome mix (labelled decisions) against the
-- `reference_weeks` weeks before, as PSI over the options (shares floored at `psi_floor`).
with cube as (
    select * from int_cube
),

params as (
    select * from run_params
),

mixes as (
    select mix, decision_type, week_start, model_key, option_id, sum(n) as n
    from (
        select 'proposal' as mix, decision_type, week_start, model_key, proposal as option_id, n from cube
        union all
        select 'proposal', decision_type, week_start, '*', proposal, n from cube
        union all
        select 'outcome', decision_type, week_start, model_key, outcome, n from cube where labelled
        union all
        select 'outcome', decision_type, week_start, '*', outcome, n from cube where labelled
    )
    group by all
),

weeks as (
    select distinct mix, decision_type, week_start, model_key from mixes
),

read_weeks as (
    select mix, decision_type, week_start, model_key, week_start as read_week from weeks
    union all
    select target.mix, target.decision_type, target.week_start, target.model_key, window_weeks.reference_week_start
    from weeks as target
    join int_reference_window as window_weeks using (decision_type, model_key, week_start)
),

paired as (
    select
        target.mix, target.decision_type, target.week_start, target.model_key, mixes.option_id,
        sum(mixes.n) filter (where mixes.week_start = target.week_start) as current,
        sum(mixes.n) filter (where mixes.week_start < target.week_start) as reference
    from read_weeks as target
    join mixes
        on mixes.mix = target.mix
        and mixes.decision_type = target.decision_type
        and mixes.model_key = target.model_key
        and mixes.week_start = target.read_week
    group by all
),

shares as (
    select
        mix, decision_type, week_start, model_key, option_id,
        coalesce(current, 0) / sum(current) over by_target as actual,
        coalesce(reference, 0) / sum(reference) over by_target as expected
    from paired
    window by_target as (partition by mix, decision_type, week_start, model_key)
),

psi as (
    select
        mix, decision_type, week_start, model_key,
        sum((greatest(actual, psi_floor) - greatest(expected, psi_floor))
            * ln(greatest(actual, psi_floor) / greatest(expected, psi_floor))) as psi
    from shares, params
    where expected is not null
    group by all
),

final as (
    select
        decision_type, week_start, model_key,
        max(psi) filter (where mix = 'proposal') as proposal_mix_psi,
        max(psi) filter (where mix = 'outcome') as outcome_mix_psi
    from psi
    group by all
)

select * from final

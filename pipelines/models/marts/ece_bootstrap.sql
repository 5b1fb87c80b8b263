-- Percentile bootstrap interval of the top-label ECE. Decisions fall into `bootstrap_blocks` random
-- blocks (hash of decision_id); each replicate draws that many blocks with replacement (hash of
-- replicate and draw, so reruns agree) and recomputes the ECE with the bins held fixed.
with binned as (
    select * from int_calibration_binned
),

params as (
    select * from run_params
),

blocks as (
    select
        decision_type, week_start, model_key, bin, block,
        decisions as n,
        sum_confidence,
        correct
    from binned
),

replicate_ids as (
    select unnest(range(bootstrap_reps)) as replicate, bootstrap_blocks from params
),

draws as (
    select replicate, hash(replicate, draw) % bootstrap_blocks as block, count(*) as weight
    from (select replicate, bootstrap_blocks, unnest(range(bootstrap_blocks)) as draw from replicate_ids)
    group by all
),

replicates as (
    select
        blocks.decision_type, blocks.week_start, blocks.model_key, draws.replicate, blocks.bin,
        sum(draws.weight * blocks.n) as n,
        sum(draws.weight * blocks.sum_confidence) as sum_confidence,
        sum(draws.weight * blocks.correct) as correct
    from blocks
    join draws using (block)
    group by all
),

ece_replicates as (
    select
        decision_type, week_start, model_key, replicate,
        sum(abs(sum_confidence - correct)) / sum(n) as ece
    from replicates
    group by all
),

sorted as (
    select decision_type, week_start, model_key, list_sort(list(ece)) as eces, count(*) as reps
    from ece_replicates
    group by all
),

positions as (
    select
        sorted.*,
        (1 - params.bootstrap_level) / 2 * (reps - 1) as lo_at,
        (1 + params.bootstrap_level) / 2 * (reps - 1) as hi_at
    from sorted, params
),

final as (
    select
        decision_type, week_start, model_key, reps,
        eces[floor(lo_at)::int + 1]
            + (lo_at - floor(lo_at)) * (eces[least(floor(lo_at)::int + 2, reps)] - eces[floor(lo_at)::int + 1])
            as ece_low,
        eces[floor(hi_at)::int + 1]
            + (hi_at - floor(hi_at)) * (eces[least(floor(hi_at)::int + 2, reps)] - eces[floor(hi_at)::int + 1])
            as ece_high
    from positions
)

select * from final

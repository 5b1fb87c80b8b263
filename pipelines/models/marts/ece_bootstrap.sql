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

block_ids as (
    select unnest(range(bootstrap_blocks)) as block from params
),

cells as (
    select distinct decision_type, week_start, model_key, bin from blocks
),

dense as (  -- per bin, its counts over the blocks 0..B-1 as vectors (0 where no decision of the bin fell)
    select
        cells.decision_type, cells.week_start, cells.model_key, cells.bin,
        list(coalesce(blocks.n, 0)::double order by block_ids.block) as n,
        list(coalesce(blocks.sum_confidence, 0) order by block_ids.block) as sum_confidence,
        list(coalesce(blocks.correct, 0)::double order by block_ids.block) as correct
    from cells
    cross join block_ids
    left join blocks
        on blocks.decision_type = cells.decision_type and blocks.week_start = cells.week_start
        and blocks.model_key = cells.model_key and blocks.bin = cells.bin and blocks.block = block_ids.block
    group by all
),

replicate_ids as (
    select unnest(range(bootstrap_reps)) as replicate, bootstrap_blocks from params
),

draws as (
    select replicate, hash(replicate, draw) % bootstrap_blocks::ubigint as block, count(*) as weight
    from (select replicate, bootstrap_blocks, unnest(range(bootstrap_blocks)) as draw from replicate_ids)
    group by all
),

weights as (  -- per replicate, how many times it drew each block, as a vector over the blocks 0..B-1
    select
        replicate_ids.replicate,
        list(coalesce(draws.weight, 0)::double order by block_ids.block) as weight
    from replicate_ids
    cross join block_ids
    left join draws on draws.replicate = replicate_ids.replicate and draws.block = block_ids.block
    group by all
),

replicates as (  -- every bin's sums in every replicate: the drawn blocks' counts, weighted by the draws
    select
        dense.decision_type, dense.week_start, dense.model_key, weights.replicate, dense.bin,
        list_dot_product(weights.weight, dense.n) as n,
        list_dot_product(weights.weight, dense.sum_confidence) as sum_confidence,
        list_dot_product(weights.weight, dense.correct) as correct
    from dense
    cross join weights
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

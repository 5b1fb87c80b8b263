-- Top-label ECE per scope: a debiased estimate and an interval for the true ECE (docs/pipelines.md,
-- "The ECE interval"). The plug-in ECE (`calibration.ece`) is biased upward, most where the model is
-- calibrated, so neither it nor a percentile bootstrap around it brackets the truth there.
-- * ece_debiased: Kumar et al. 2019's normal-debiased estimator. Per bin, with g the mean confidence minus
--   the agreement and s^2 = agr (1 - agr) / (n - 1): 2|g| - E|N(g, s^2)| = |g| - e^(-z^2/2) (s sqrt(2/pi)
--   - |g| erfc(z / sqrt 2) e^(z^2/2)), z = |g| / s; weighted by n, floored at 0. (They average 1,000
--   normal draws; here the closed form, erfc by Abramowitz and Stegun 7.1.26, error below 1.5e-7.)
-- * ece_low, ece_high: the bootstrap distribution of ece_debiased, moved so that its mean sits on the
--   estimate. Decisions fall into `bootstrap_blocks` blocks (hash of decision_id); each replicate draws
--   that many blocks with replacement (hash of replicate and draw, so reruns agree), bins held fixed.
-- * ece_low is 0 when the week is consistent with perfect calibration: the unbiased estimate of the
--   squared calibration error, sum of n (g^2 - s^2) / N (Kumar et al. 2019, Broecker 2012), moved the
--   same way, is not above 0 at its (1 - bootstrap_level) / 2 quantile.
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

observed as (  -- every bin's sums in the week itself (replicate -1)
    select
        decision_type, week_start, model_key, -1 as replicate, bin,
        sum(n)::double as n, sum(sum_confidence) as sum_confidence, sum(correct)::double as correct
    from blocks
    group by all
),

bin_gaps as (  -- per bin: the gap g, the variance s^2 of the bin's agreement, and z = |g| / s
    select
        *,
        (sum_confidence - correct) / n as gap,
        case when n > 1 then correct / n * (1 - correct / n) / (n - 1) else 0 end as gap_var,
        abs(gap) / sqrt(gap_var) as z
    from (select * from replicates union all select * from observed)
    where n > 0
),

bin_terms as (  -- per bin: 2|g| - E|N(g, s^2)|; erfc(z / sqrt 2) e^(z^2/2) as A&S 7.1.26's polynomial in u
    select
        *,
        abs(gap) - case when gap_var > 0 then exp(-0.5 * z * z) * (sqrt(gap_var * 2 / pi())
            - abs(gap) * u * (0.254829592 + u * (-0.284496736 + u * (1.421413741 + u * (-1.453152027
              + u * 1.061405429))))) else 0 end as debiased
    from (select *, 1 / (1 + 0.3275911 * z / sqrt(2)) as u from bin_gaps)
),

estimates as (  -- the week's (replicate -1) and every replicate's debiased ECE and squared error
    select
        decision_type, week_start, model_key, replicate,
        greatest(0, sum(n * debiased) / sum(n)) as ece_debiased,
        sum(n * (gap * gap - gap_var)) / sum(n) as squared_error
    from bin_terms
    group by all
),

spread as (
    select
        decision_type, week_start, model_key, count(*) as reps,
        list_sort(list(ece_debiased)) as eces, avg(ece_debiased) as mean_ece,
        list_sort(list(squared_error)) as squares, avg(squared_error) as mean_square
    from estimates
    where replicate >= 0
    group by all
),

positions as (  -- 0-based positions of the two tails in the sorted replicates (numpy's linear percentile)
    select
        spread.*,
        (1 - params.bootstrap_level) / 2 * (reps - 1) as lo_at,
        (1 + params.bootstrap_level) / 2 * (reps - 1) as hi_at
    from spread, params
),

quantiles as (
    select
        *,
        eces[floor(lo_at)::int + 1]
            + (lo_at - floor(lo_at)) * (eces[least(floor(lo_at)::int + 2, reps)] - eces[floor(lo_at)::int + 1])
            as ece_q_low,
        eces[floor(hi_at)::int + 1]
            + (hi_at - floor(hi_at)) * (eces[least(floor(hi_at)::int + 2, reps)] - eces[floor(hi_at)::int + 1])
            as ece_q_high,
        squares[floor(lo_at)::int + 1]
            + (lo_at - floor(lo_at)) * (squares[least(floor(lo_at)::int + 2, reps)] - squares[floor(lo_at)::int + 1])
            as square_q_low
    from positions
),

final as (
    select
        quantiles.decision_type, quantiles.week_start, quantiles.model_key, quantiles.reps,
        week.ece_debiased,
        case when week.squared_error + quantiles.square_q_low - quantiles.mean_square <= 0 then 0.0
             else greatest(0, least(week.ece_debiased, week.ece_debiased + quantiles.ece_q_low - quantiles.mean_ece))
             end as ece_low,
        greatest(week.ece_debiased, week.ece_debiased + quantiles.ece_q_high - quantiles.mean_ece) as ece_high
    from quantiles
    join estimates as week using (decision_type, week_start, model_key)
    where week.replicate = -1
)

select * from final

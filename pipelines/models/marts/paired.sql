-- Two candidates compared on the decisions both scored and that have an outcome, per decision type and
-- week: one row per pair of `model_key`s of two candidates (A < B by candidate name), and one per pair of
-- candidates over all their identities (`model_key_a` = `model_key_b` = '*'). Correctness of each on the
-- same decisions, McNemar's table (both right, only A, only B, neither), `difference` = agreement B - A with
-- its paired Wald interval (the normal interval of the mean per-decision difference: se = sqrt(only_a +
-- only_b - (only_b - only_a)^2 / n) / n, z for `bootstrap_level`), McNemar's exact two-sided p-value on the
-- discordant pairs (a binomial test, statsmodels' `mcnemar(exact=True)`), calibration of each on the pairs
-- (mean confidence, top-label Brier: mean (confidence - correct)^2, over the pairs whose row is not
-- `one_hot`), and the scorer time and cost of each over all the decisions it scored that week
-- (`int_segment_week_cost`, as `cost`). Outcomes outside the options are misses for both. Decisions are paired by the 64-bit hash of their id (`int_decisions.decision_key`).
with params as (
    select paired_z from run_params
),

multi as (  -- decision types whose decisions more than one candidate scored
    select decision_type from int_segments where is_scored group by all having count(distinct candidate) > 1
),

ranked as (  -- each candidate of those types numbered by name (a pair is two candidates, a < b)
    select decision_type, candidate,
        dense_rank() over (partition by decision_type order by candidate)::smallint as rank,
        count(*) over (partition by decision_type)::smallint as candidates
    from (
        select distinct decision_type, candidate
        from int_segments
        where is_scored and candidate is not null and decision_type in (select decision_type from multi)
    )
),

sides as (  -- the scored segments of those types with their candidate's rank (integer keys from here on)
    select segments.segment, segments.all_scope, segments.model_scope, ranked.rank,
        ranked.rank < ranked.candidates as before_last
    from int_segments as segments
    join ranked using (decision_type, candidate)
    where segments.is_scored
),

labelled as materialized (  -- read twice; materialized, so that the segments' join stays below the pairs'
    select sides.all_scope, sides.model_scope, sides.rank, sides.before_last, decisions.week_start,
        decisions.decision_key, decisions.correct,
        case when not decisions.one_hot then decisions.confidence end as confidence
    from int_decisions as decisions
    join sides using (segment)
    where decisions.labelled
),

counted as (  -- a: every candidate but the last, b: every candidate but the first (one row per pair)
    select
        a.all_scope, a.week_start, a.rank as rank_a, b.rank as rank_b, a.model_scope as scope_a,
        b.model_scope as scope_b,
        count(*)::bigint as paired,
        count(*) filter (where a.correct)::bigint as correct_a,
        count(*) filter (where b.correct)::bigint as correct_b,
        count(*) filter (where a.correct and b.correct)::bigint as both_correct,
        count(*) filter (where a.correct and not b.correct)::bigint as only_a,
        count(*) filter (where b.correct and not a.correct)::bigint as only_b,
        count(*) filter (where not a.correct and not b.correct)::bigint as neither,
        avg(a.confidence) as mean_confidence_a,
        avg(b.confidence) as mean_confidence_b,
        avg((a.confidence - a.correct::int) ** 2) as brier_top_a,  -- null confidence (one-hot): skipped
        avg((b.confidence - b.correct::int) ** 2) as brier_top_b
    from labelled as a
    join labelled as b
        on a.decision_key = b.decision_key and a.all_scope = b.all_scope and a.rank < b.rank
    where a.before_last and b.rank > 1
    group by grouping sets (
        (a.all_scope, a.week_start, a.rank, b.rank, a.model_scope, b.model_scope),
        (a.all_scope, a.week_start, a.rank, b.rank)
    )
),

types as (
    select distinct all_scope, decision_type from int_segments
),

keys as (
    select distinct model_scope, model_key from int_segments
),

pairs as (  -- named: the type, both candidates and model keys ('*': over every identity of the two)
    select
        types.decision_type, counted.week_start, a.candidate as candidate_a, b.candidate as candidate_b,
        coalesce(key_a.model_key, '*') as model_key_a, coalesce(key_b.model_key, '*') as model_key_b,
        counted.paired, counted.correct_a, counted.correct_b, counted.both_correct, counted.only_a,
        counted.only_b, counted.neither, counted.mean_confidence_a, counted.mean_confidence_b,
        counted.brier_top_a, counted.brier_top_b
    from counted
    join types using (all_scope)
    join ranked as a on a.decision_type = types.decision_type and a.rank = counted.rank_a
    join ranked as b on b.decision_type = types.decision_type and b.rank = counted.rank_b
    left join keys as key_a on key_a.model_scope = counted.scope_a
    left join keys as key_b on key_b.model_scope = counted.scope_b
),

usage as (
    select
        segments.decision_type, weeks.week_start, segments.candidate,
        coalesce(segments.model_key, '*') as model_key,
        sum(weeks.offered) as scored,
        sum(weeks.sum_scorer_ms) as sum_scorer_ms,
        sum(weeks.cost_usd) as cost_usd
    from int_segment_week_cost as weeks
    join int_segments as segments using (segment)
    where segments.decision_type in (select decision_type from multi)
    group by grouping sets (
        (segments.decision_type, weeks.week_start, segments.candidate, segments.model_key),
        (segments.decision_type, weeks.week_start, segments.candidate)
    )
),

compared as (
    select
        pairs.*,
        correct_a / paired as agreement_a,
        correct_b / paired as agreement_b,
        (correct_b - correct_a) / paired as difference,
        sqrt(greatest(only_a + only_b - (only_b - only_a) ** 2 / paired, 0)) / paired as difference_se,
        mcnemar_exact_p(only_a, only_b) as mcnemar_p
    from pairs
),

final as (
    select
        compared.decision_type, compared.week_start, strftime(compared.week_start, '%G-W%V') as week,
        compared.candidate_a, compared.model_key_a, compared.candidate_b, compared.model_key_b, compared.paired,
        compared.correct_a, compared.correct_b, compared.both_correct, compared.only_a, compared.only_b,
        compared.neither, compared.agreement_a, compared.agreement_b, compared.difference,
        compared.difference - params.paired_z * compared.difference_se as difference_low,
        compared.difference + params.paired_z * compared.difference_se as difference_high,
        compared.mcnemar_p,
        compared.mean_confidence_a, compared.mean_confidence_b, compared.brier_top_a, compared.brier_top_b,
        usage_a.sum_scorer_ms / nullif(usage_a.scored, 0) as mean_scorer_ms_a,
        usage_b.sum_scorer_ms / nullif(usage_b.scored, 0) as mean_scorer_ms_b,
        1000 * usage_a.cost_usd / nullif(usage_a.scored, 0) as usd_per_1k_a,
        1000 * usage_b.cost_usd / nullif(usage_b.scored, 0) as usd_per_1k_b
    from compared
    cross join params
    left join usage as usage_a
        on usage_a.decision_type = compared.decision_type and usage_a.week_start = compared.week_start
        and usage_a.candidate = compared.candidate_a and usage_a.model_key = compared.model_key_a
    left join usage as usage_b
        on usage_b.decision_type = compared.decision_type and usage_b.week_start = compared.week_start
        and usage_b.candidate = compared.candidate_b and usage_b.model_key = compared.model_key_b
)

select * from final

-- Offered -> sampled -> scored -> labelled per decision type, week and candidate (each candidate is offered
-- every sampled decision; v1 rows, without a candidate, count as `default`), with what is still unjoined and
-- the "none of the above" signal: `outside_options` decisions whose outcome is not one of their options
-- (recorded `in_options = false`), `outside_options_rate` = outside_options / with_outcome.
-- Decisions the sidecar counted in its drop summaries instead of writing a row (`stg_drops`) are offered and
-- not scored: they are added to both.
-- Invariants (tests/pipelines/test_funnel.py): scored + not_scored = offered; labelled + unjoined = scored.
with decisions as (
    select * from int_decisions
),

flags as (  -- one count per combination of the flags: a few rows per segment and week
    select
        segment, week_start, sampled, is_scored, joined, labelled, joined and outcome_pos is null as outside,
        count(*) as n
    from decisions
    group by all
),

per_segment as (
    select
        segment, week_start,
        sum(n) as offered,
        coalesce(sum(n) filter (where sampled), 0) as sampled,
        coalesce(sum(n) filter (where is_scored), 0) as scored,
        coalesce(sum(n) filter (where not is_scored), 0) as not_scored,
        coalesce(sum(n) filter (where labelled), 0) as labelled,
        coalesce(sum(n) filter (where is_scored and not joined), 0) as unjoined,
        coalesce(sum(n) filter (where joined), 0) as with_outcome,
        coalesce(sum(n) filter (where outside), 0) as outside_options
    from flags
    group by all
),

counts as (
    select
        segments.decision_type, cells.week_start, strftime(cells.week_start, '%G-W%V') as week,
        coalesce(segments.candidate, 'default') as candidate,
        sum(cells.offered)::bigint as offered,
        sum(cells.sampled)::bigint as sampled,
        sum(cells.scored)::bigint as scored,
        sum(cells.not_scored)::bigint as not_scored,
        sum(cells.labelled)::bigint as labelled,
        sum(cells.unjoined)::bigint as unjoined,
        sum(cells.with_outcome)::bigint as with_outcome,
        sum(cells.outside_options)::bigint as outside_options
    from per_segment as cells
    join int_segments as segments using (segment)
    group by all
),

drops as (
    select decision_type, week_start, candidate, sum(dropped)::bigint as dropped
    from stg_drops
    group by all
),

with_drops as (
    select
        coalesce(counts.decision_type, drops.decision_type) as decision_type,
        coalesce(counts.week_start, drops.week_start) as week_start,
        strftime(coalesce(counts.week_start, drops.week_start), '%G-W%V') as week,
        coalesce(counts.candidate, drops.candidate) as candidate,
        (coalesce(counts.offered, 0) + coalesce(drops.dropped, 0))::bigint as offered,
        coalesce(counts.sampled, 0)::bigint as sampled,
        coalesce(counts.scored, 0)::bigint as scored,
        (coalesce(counts.not_scored, 0) + coalesce(drops.dropped, 0))::bigint as not_scored,
        coalesce(counts.labelled, 0)::bigint as labelled,
        coalesce(counts.unjoined, 0)::bigint as unjoined,
        coalesce(counts.with_outcome, 0)::bigint as with_outcome,
        coalesce(counts.outside_options, 0)::bigint as outside_options
    from counts
    full outer join drops using (decision_type, week_start, candidate)
),

final as (
    select
        *,
        labelled / nullif(scored, 0) as label_rate,
        outside_options / nullif(with_outcome, 0) as outside_options_rate
    from with_drops
)

select * from final

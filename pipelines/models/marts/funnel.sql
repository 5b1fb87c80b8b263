-- Offered -> sampled -> scored -> labelled per decision type and week, with what is still unjoined.
-- Invariants (tests/pipelines/test_funnel.py): scored + not_scored = offered; labelled + unjoined = scored.
with decisions as (
    select * from int_decisions
),

per_segment as (
    select
        segment, week_start,
        count(*) as offered,
        count(*) filter (where sampled) as sampled,
        count(*) filter (where is_scored) as scored,
        count(*) filter (where not is_scored) as not_scored,
        count(*) filter (where labelled) as labelled,
        count(*) filter (where is_scored and not joined) as unjoined,
        count(*) filter (where joined) as with_outcome
    from decisions
    group by all
),

counts as (
    select
        segments.decision_type, cells.week_start, strftime(cells.week_start, '%G-W%V') as week,
        sum(cells.offered)::bigint as offered,
        sum(cells.sampled)::bigint as sampled,
        sum(cells.scored)::bigint as scored,
        sum(cells.not_scored)::bigint as not_scored,
        sum(cells.labelled)::bigint as labelled,
        sum(cells.unjoined)::bigint as unjoined,
        sum(cells.with_outcome)::bigint as with_outcome
    from per_segment as cells
    join int_segments as segments using (segment)
    group by all
),

final as (
    select *, labelled / nullif(scored, 0) as label_rate
    from counts
)

select * from final

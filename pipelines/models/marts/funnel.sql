-- Offered -> sampled -> scored -> labelled per decision type and week, with what is still unjoined.
-- Invariants (tests/pipelines/test_funnel.py): scored + not_scored = offered; labelled + unjoined = scored.
with decisions as (
    select * from int_decisions
),

counts as (
    select
        decision_type, week_start, week,
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

final as (
    select *, labelled / nullif(scored, 0) as label_rate
    from counts
)

select * from final

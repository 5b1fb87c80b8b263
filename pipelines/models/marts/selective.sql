-- Abstention at the per-option thresholds: how many scored decisions the thresholds accept, coverage and
-- selective risk over the labelled ones, and how many are routed to review (scored but not accepted).
with decisions as (
    select * from int_accepted
),

per_model as (
    select
        decision_type, week_start, week, model_key,
        sum(n)::bigint as scored,
        coalesce(sum(n) filter (where accepted), 0)::bigint as accepted,
        coalesce(sum(n) filter (where not accepted), 0)::bigint as routed_to_review,
        coalesce(sum(n) filter (where labelled), 0)::bigint as labelled,
        coalesce(sum(n) filter (where labelled and accepted), 0)::bigint as accepted_labelled,
        coalesce(sum(correct) filter (where labelled and accepted), 0)::bigint as accepted_correct
    from decisions
    group by all
),

scoped as (
    select * from per_model
    union all
    select decision_type, week_start, week, '*', sum(scored)::bigint, sum(accepted)::bigint,
        sum(routed_to_review)::bigint, sum(labelled)::bigint, sum(accepted_labelled)::bigint,
        sum(accepted_correct)::bigint
    from per_model
    group by all
),

final as (
    select
        *,
        accepted_labelled / nullif(labelled, 0) as coverage,
        1 - accepted_correct / nullif(accepted_labelled, 0) as selective_risk,
        labelled / nullif(scored, 0) as label_rate
    from scoped
)

select * from final

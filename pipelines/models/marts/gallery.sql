-- The disagreement gallery: per decision type, week and model key, the labelled decisions whose proposal
-- differs from production's outcome at `severe_confidence` or above (`int_flagged`: the ones
-- `int_decisions` keeps the id of): the 25 most confident severe errors (a high-consequence option
-- proposed) and the 25 most confident other disagreements, numbered by `rank` (severe first, then by
-- confidence). `state` is the decision's state as the sidecar stored it: redacted as the catalog
-- says before it was persisted (removed fields absent, hashed ones `hmac-sha256:<hex>`), null where the
-- decision type does not store states.
with params as (
    select 25 as per_kind  -- rows kept of each kind
),

flagged as (  -- with its confidence bucket (1/10,000 wide: a monotone key, no sort)
    select *, floor(confidence * 10000) as bucket from int_flagged
),

buckets as (  -- each kind's rows counted per bucket
    select decision_type, week_start, model_key, severe, bucket, count(*) as n
    from flagged
    group by all
),

cutoffs as (  -- the highest bucket with per_kind rows at or above it holds the kind's last kept row
    select decision_type, week_start, model_key, severe,
        coalesce(max(bucket) filter (where above >= (select per_kind from params)), min(bucket)) as cutoff
    from (
        select buckets.*,
            sum(n) over (partition by decision_type, week_start, model_key, severe order by bucket desc) as above
        from buckets
    ) as running
    group by all
),

contenders as (  -- the rows at or above their kind's cutoff: the most confident and their bucket's ties
    select flagged.*
    from flagged
    join cutoffs
        on cutoffs.decision_type = flagged.decision_type and cutoffs.week_start = flagged.week_start
        and cutoffs.model_key is not distinct from flagged.model_key and cutoffs.severe = flagged.severe
    where flagged.bucket >= cutoffs.cutoff
),

kept as (  -- the most confident of each kind
    select *
    from (
        select
            contenders.*,
            row_number() over (
                partition by decision_type, week_start, model_key, severe order by confidence desc, decision_id
            ) as position
        from contenders
    ) as numbered
    where position <= (select per_kind from params)
),

ranked as (
    select
        kept.*,
        row_number() over (
            partition by decision_type, week_start, model_key order by severe desc, confidence desc, decision_id
        ) as place
    from kept
),

final as (
    select
        decision_type, week_start, strftime(week_start, '%G-W%V') as week, model_key,
        place::integer as rank, decision_id, proposal, outcome, confidence, severe, received_at, state
    from ranked
)

select * from final

"""The verdict rules on crafted marts: go, wait (with an ETA), reject, maturity and each health check."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from dashboards.config import DEFAULTS, ReviewConfig, load_config
from dashboards.errors import BadReviewConfig
from dashboards.marts import CANDIDATE, CANDIDATE_NAME, Marts
from dashboards.policies import Replayed
from dashboards.verdict.decision import ECE, MATURE, NO_REFERENCE, PSI, Check, Decision, Verdict, decide
from dashboards.verdict.evidence import gather
from dashboards.verdict.rules import (
    HARD_LIMITS,
    KINDS,
    LABEL_DELAY,
    LABEL_GATES,
    LABEL_SHIFT,
    OVERLAP,
    SRM,
    Kind,
)
from pipelines.confseq import lower_bound
from pipelines.policy import Policy
from pipelines.weeks import parse_week, week_label

if TYPE_CHECKING:
    from dashboards.report import Review

WEEK, TYPE = "2026-W48", "routing"
CAND = "default gemma/Q4_K_M/cpu/none #abcdef123456"
OTHER = "challenger gemma/Q8_0/cpu/none #fedcba654321"
POLICY_SHA = "0123456789ab" + "c" * 52


def crafted(
    *,
    labelled: int = 2000,
    accepted_labelled: int = 1000,
    accepted_correct: int = 995,
    severe: int = 0,
    scored: int = 4000,
    accepted: int = 2000,
    in_sample_accepted: int | None = None,
    ece_alert: bool = False,
    band: str = "stable",
    reference_weeks: int = 3,
    psi: float | None = 0.01,
    p99: float = 120.0,
    cost_usd: float = 0.05,
    mature: bool = True,
    policy: str = "none",
    funnel: dict[str, tuple[int, int, int]] | None = None,
    paired: int | None = None,
    confidence: tuple[float, float] = (0.80, 0.79),
    delay_p99_hours: float = 40.0,
) -> Marts:
    """One decision type, one candidate (or two with ``funnel``), one week: the columns the rules read."""
    key = {"decision_type": TYPE, "week": WEEK, CANDIDATE: CAND, "mature": mature}
    own = accepted if in_sample_accepted is None else in_sample_accepted  # at the week's own thresholds
    funnel = funnel or {"default": (scored, scored, labelled)}
    ledger = {
        **key,
        "policy": policy,
        "scored": scored,
        "accepted": accepted,
        "labelled": labelled,
        "unlabelled": scored - labelled,
        "ledger_accepted_labelled": accepted_labelled,
        "ledger_accepted_correct": accepted_correct,
        "ledger_severe_errors": severe,
        "weeks_covered": 2,
        "looks": 3,
        "ledger_first_week": "2026-W46",
        "counted_through": "2026-W47" if not mature else WEEK,
        "reset_reason": "first look",
        "reset_week": "2026-W46",
        "reset_from": None,
        "provisional_accepted_labelled": 0,
        "provisional_accepted_correct": 0,
        "labelled_confidence_mean": confidence[0],
        "labelled_confidence_sd": 0.1,
        "unlabelled_confidence_mean": confidence[1],
        "unlabelled_confidence_sd": 0.1,
        "matures_at": "2026-12-03 00:00:00+00:00",
    }
    frames = {
        "funnel": pd.DataFrame(
            [
                {
                    "decision_type": TYPE,
                    "week": WEEK,
                    CANDIDATE_NAME: name,
                    "offered": o,
                    "sampled": s,
                    "labelled": n,
                }
                for name, (o, s, n) in funnel.items()
            ]
        ),
        "agreement": pd.DataFrame([{**key, "scored": scored, "labelled": labelled, "severe_errors": severe}]),
        "selective": pd.DataFrame(
            [
                {
                    **key,
                    "scored": scored,
                    "accepted": own,
                    "coverage": 0.5,
                    "accepted_labelled": accepted_labelled,
                    "accepted_correct": accepted_correct,
                }
            ]
        ),
        "drift": pd.DataFrame(
            [
                {
                    **key,
                    "ece_alert": ece_alert,
                    "confidence_psi_band": band,
                    "mix_psi_band": "stable",
                    "reference_ece_weeks": reference_weeks,
                    "confidence_psi": psi,
                }
            ]
        ),
        "latency": pd.DataFrame([{"decision_type": TYPE, "week": WEEK, "scorer_p99_ms": p99}]),
        "cost": pd.DataFrame(
            [
                {
                    "decision_type": TYPE,
                    "week": WEEK,
                    "model_name": "gemma",
                    "cost_usd": cost_usd,
                    "scored": scored,
                    "accepted": own,
                }
            ]
        ),
        "risk_coverage": pd.DataFrame(
            [
                {
                    **key,
                    "threshold": 0.9,
                    "coverage": 0.5,
                    "accepted": accepted_labelled,
                    "accepted_correct": accepted_correct,
                }
            ]
        ),
        "evidence": pd.DataFrame([ledger]),
        "paired": pd.DataFrame(
            [
                {
                    "decision_type": TYPE,
                    "week": WEEK,
                    "candidate_a": "challenger",
                    "candidate_b": "default",
                    "model_key_a": "*",
                    "model_key_b": "*",
                    "paired": paired,
                }
            ]
            if paired is not None
            else {"decision_type": [], "week": []}
        ),
        "label_delay": pd.DataFrame(
            [
                {
                    "decision_type": TYPE,
                    "week": WEEK,
                    "source": "api",
                    "p99_hours": delay_p99_hours,
                    "maturity_lag_days": 3.0,
                }
            ]
        ),
    }
    return Marts(frames, WEEK, "crafted")


def replayed(
    *, chosen_on: str = "2026-W47", accepted_labelled: int = 1000, accepted_correct: int = 995
) -> Replayed:
    """A policy of the crafted candidate chosen on ``chosen_on``, with its replay's counts on the week."""
    policy = Policy(TYPE, "default", "ab" * 32, CAND, chosen_on, "2027-01-31", 0.95, 0.05, 100, "review")
    result = {
        "scored": 4000,
        "accepted": 2000,
        "accepted_labelled": accepted_labelled,
        "accepted_correct": accepted_correct,
        "coverage": 0.5,
    }
    return Replayed(policy, WEEK, result, sha256=POLICY_SHA)


IN_SAMPLE = DEFAULTS.model_copy(update={"require_policy": False})
"""The rules with go allowed on the week's own (in-sample) thresholds."""


def verdict_of(marts: Marts, config: ReviewConfig = IN_SAMPLE, policy: Replayed | None = None) -> Verdict:
    """Decide the crafted candidate."""
    return decide(gather(marts, TYPE, CAND, config.min_coverage, policy), config)


def failed(v: Verdict) -> set[str]:
    """The rules of the failing checks that block."""
    return {k.rule for k in v.failing}


def test_go_when_every_rule_holds() -> None:
    """995/1000 accepted correct in the ledger (anytime lower bound 0.985), 50% coverage, healthy: go."""
    v = verdict_of(crafted())
    assert v.decision is Decision.GO, v.reasons
    assert (v.binding, v.provisional, v.failing) == (None, False, ())
    v = verdict_of(crafted(policy=POLICY_SHA[:12]), DEFAULTS, replayed())
    assert v.decision is Decision.GO, v.reasons


def test_by_default_go_needs_an_out_of_sample_policy() -> None:
    """The same week without a policy, or with one chosen on the review week itself, waits by default."""
    for policy in (None, replayed(chosen_on=WEEK)):
        marts = crafted(policy="none" if policy is None else POLICY_SHA[:12])
        v = verdict_of(marts, DEFAULTS, policy)
        assert v.decision is Decision.WAIT
        assert v.binding is not None
        assert v.binding.rule == "out-of-sample policy"


def test_the_rules_read_the_ledger_at_the_policy() -> None:
    """The ledger row of the given policy decides, not the in-sample numbers.

    A policy the pipelines were not given falls back to this week's replay, and the reasons say so; its
    health checks read the key's other ledger row (the labelled confidence does not depend on the policy).
    """
    v = verdict_of(crafted(policy=POLICY_SHA[:12], accepted_correct=960), DEFAULTS, replayed())
    assert v.decision is Decision.WAIT
    assert any("precision lower bound" in r and "ledger at policy 0123456789ab" in r for r in v.reasons)
    v = verdict_of(crafted(policy="none"), DEFAULTS, replayed(accepted_correct=960))
    assert v.decision is Decision.WAIT
    assert failed(v) == {"precision lower bound meets target"}
    assert any("this week's labels only" in r for r in v.reasons), v.reasons
    assert verdict_of(crafted(policy="none"), DEFAULTS, replayed()).decision is Decision.GO


def test_cost_per_accepted_is_priced_at_the_policy() -> None:
    """Cost per accepted = the week's cost per scored decision / coverage at the policy (as precision).

    A week whose own in-sample thresholds accept nothing still has a cost per accepted at the policy.
    """
    v = verdict_of(crafted(policy=POLICY_SHA[:12], in_sample_accepted=0), DEFAULTS, replayed())
    assert v.decision is Decision.GO, v.reasons
    (cost,) = (k for k in v.checks if k.rule == "cost within budget")
    assert cost.detail.startswith("$0.00003 per accepted"), cost.detail  # $0.05 / 4,000 scored / 50%
    v = verdict_of(crafted(policy=POLICY_SHA[:12], accepted=400, cost_usd=0.5), DEFAULTS, replayed())
    (cost,) = (k for k in v.checks if k.rule == "cost within budget")
    assert cost.detail.startswith("$0.00125 per accepted"), cost.detail  # $0.5 / 400 accepted of 4,000


@pytest.mark.parametrize(
    ("change", "failed_rule"),
    [
        ({"ece_alert": True}, "no ECE alert"),
        ({"band": "significant"}, "PSI below blocking band"),
        ({"accepted": 400}, "coverage above minimum"),
        ({"p99": 800.0}, "p99 within budget"),
        ({"cost_usd": 3.0}, "cost within budget"),
        ({"accepted_correct": 960}, "precision lower bound meets target"),
        ({"severe": 10}, "severe-error rate within limit"),
    ],
)
def test_each_go_rule_alone_turns_go_into_wait(change: dict[str, object], failed_rule: str) -> None:
    """Breaking one go rule (but no reject rule) waits, naming that rule and only it."""
    v = verdict_of(crafted(**change))  # type: ignore[arg-type]
    assert v.decision is Decision.WAIT
    assert failed(v) == {failed_rule}
    assert any(failed_rule in r for r in v.reasons)


def test_a_drift_check_without_a_reference_cannot_count_towards_go() -> None:
    """A new identity (no reference week, no PSI) waits: both drift checks say 'no reference yet'."""
    v = verdict_of(crafted(reference_weeks=0, psi=None))
    assert v.decision is Decision.WAIT
    states = {k.rule: k.state for k in v.checks}
    assert states[ECE] == NO_REFERENCE
    assert states[PSI] == NO_REFERENCE
    assert any("no reference yet" in r for r in v.reasons)


def test_an_immature_week_never_says_go_and_says_when_it_matures() -> None:
    """Everything passes but the week's outcomes are not final: wait, provisional, maturity said first."""
    v = verdict_of(crafted(mature=False))
    assert v.decision is Decision.WAIT
    assert v.provisional
    assert v.matures_at == "2026-12-03 00:00:00+00:00"
    assert failed(v) == {MATURE}
    assert v.reasons[0].startswith(
        "provisional: outcomes of 2026-W48 not final yet (it matures at 2026-12-03"
    )


def test_an_immature_week_can_still_be_rejected_on_a_hard_limit() -> None:
    """Provisional and the scorer's p99 over the hard limit: reject, and the maturity is still said."""
    v = verdict_of(crafted(mature=False, p99=5000.0))
    assert v.decision is Decision.REJECT
    assert v.binding is not None
    assert v.binding.rule == "p99 within hard budget"
    assert any(r.startswith("provisional:") for r in v.reasons)


@pytest.mark.parametrize(
    ("change", "failed_rule"),
    [
        ({"severe": 40}, "severe-error rate not above limit"),
        ({"accepted_correct": 800}, "precision can reach target at the policy"),
        ({"p99": 5000.0}, "p99 within hard budget"),
        ({"cost_usd": 50.0}, "cost within hard budget"),
    ],
)
def test_reject_rules(change: dict[str, object], failed_rule: str) -> None:
    """Severe-error lower bound over the limit, precision upper bound under target, a hard budget: reject."""
    v = verdict_of(crafted(**change))  # type: ignore[arg-type]
    assert v.decision is Decision.REJECT
    assert v.binding is not None
    assert v.binding.rule == failed_rule
    assert v.reasons[0].startswith(f"failed: {failed_rule}")


def test_no_statistical_reject_without_enough_labels() -> None:
    """A bad precision on 100 labelled accepted decisions waits rather than rejects."""
    assert verdict_of(crafted(accepted_labelled=100, accepted_correct=60)).decision is Decision.WAIT


def test_the_eta_counts_labels_for_the_bound_at_80_percent_power() -> None:
    """97% on 400 labelled accepted (bound under 0.95): the ETA's labels clear 0.95 at 0.97.

    And the week they arrive in at 200 a week (400 over two covered weeks).
    """
    v = verdict_of(crafted(accepted_labelled=400, accepted_correct=388))
    assert v.decision is Decision.WAIT
    assert v.eta is not None
    assert v.eta.labels_needed == v.labels_needed > 100
    total = 400 + v.eta.labels_needed
    assert lower_bound(0.97 * total, total, 0.025) >= 0.95
    assert v.eta.per_week == 200
    weeks = -(-v.eta.labels_needed // 200)
    assert v.eta.week == week_label(parse_week(WEEK) + dt.timedelta(weeks=weeks))
    assert any("80% power" in r for r in v.reasons)
    v = verdict_of(crafted(accepted_labelled=1000, accepted_correct=940))
    assert v.eta is not None
    assert v.eta.labels_needed == -1


def test_sample_ratio_mismatch_names_the_check() -> None:
    """Against a configured 50% sampling, 1,800 of 4,000 scored (p ~ 1e-10) fails.

    Two candidates scoring 4,000 and 3,600 of 4,000 fail against each other without a configured rate.
    """
    config = IN_SAMPLE.model_copy(update={"sampling_rates": {TYPE: 0.5}})
    v = verdict_of(crafted(funnel={"default": (4000, 1800, 2000)}), config)
    assert v.decision is Decision.WAIT
    assert failed(v) == {SRM}
    assert any(r.startswith(f"failed: {SRM}") for r in v.reasons)
    assert verdict_of(crafted(funnel={"default": (4000, 2010, 2000)}), config).decision is Decision.GO
    two = {"default": (4000, 4000, 2000), "challenger": (4000, 3600, 2000)}
    v = verdict_of(crafted(funnel=two, paired=2000))
    assert failed(v) == {SRM}


def test_low_overlap_between_candidates_names_the_check() -> None:
    """Two candidates whose paired decisions are 40% of the labelled: the overlap check fails alone."""
    two = {"default": (4000, 4000, 2000), "challenger": (4000, 4000, 2000)}
    v = verdict_of(crafted(funnel=two, paired=800))
    assert v.decision is Decision.WAIT
    assert failed(v) == {OVERLAP}
    assert verdict_of(crafted(funnel=two, paired=1950)).decision is Decision.GO


def test_labels_skewed_to_confident_decisions_name_the_check() -> None:
    """Labelled confidence 0.90 vs unlabelled 0.80 (sd 0.1: d = 1.0) fails; 0.81 vs 0.80 (d = 0.1) passes."""
    v = verdict_of(crafted(confidence=(0.90, 0.80)))
    assert v.decision is Decision.WAIT
    assert failed(v) == {LABEL_SHIFT}
    assert any("standardized difference +1.00" in r for r in v.reasons)
    assert verdict_of(crafted(confidence=(0.81, 0.80))).decision is Decision.GO


def test_a_maturity_lag_under_the_observed_p99_delay_warns_without_blocking() -> None:
    """p99 outcome delay 5 days against a 3-day lag: go still, with a warning naming the recommended lag."""
    v = verdict_of(crafted(delay_p99_hours=120.0))
    assert v.decision is Decision.GO
    assert [k.rule for k in v.warnings] == [LABEL_DELAY]
    assert any(r.startswith("warning: ") and "recommended lag 5 days" in r for r in v.reasons)


def test_the_delay_warning_reads_a_settled_week_not_the_review_weeks_cut_off_p99() -> None:
    """A settled week's delays are read, not the review week's cut-off ones; the warning names the week.

    The review week's delays (computed before it ended: p99 40 h) read low; W45's (16 days after it ended:
    p99 120 h) are read.

    With W45 computed 3 days after it ended, the most settled week is read and the warning says it may read
    low.
    """
    marts = crafted(delay_p99_hours=40.0)
    review_week = marts.frames["label_delay"].assign(as_of=pd.Timestamp("2026-11-25", tz="UTC"))
    early = review_week.assign(week="2026-W45", p99_hours=120.0, as_of=pd.Timestamp("2026-11-25", tz="UTC"))
    marts.frames["label_delay"] = pd.concat([early, review_week], ignore_index=True)
    v = verdict_of(marts)
    assert [k.rule for k in v.warnings] == [LABEL_DELAY]
    (warning,) = v.warnings
    assert "recommended lag 5 days" in warning.detail
    assert "(label_delay mart, 2026-W45)" in warning.detail
    recent = early.assign(as_of=pd.Timestamp("2026-11-12", tz="UTC"))  # 3 days after W45 ended
    marts.frames["label_delay"] = pd.concat([recent, review_week], ignore_index=True)
    (warning,) = verdict_of(marts).warnings
    assert "too recent for its slowest outcomes" in warning.detail


def test_extra_gates_block_go_and_are_named() -> None:
    """A gate another module adds (a non-inferiority check, say) fails: wait, binding on that gate."""
    from dashboards.verdict.decision import Check  # noqa: PLC0415

    gate = Check("correctness not inferior", passed=False, detail="audited 0.91 vs 0.95")
    v = decide(gather(crafted(), TYPE, CAND, 0.2), IN_SAMPLE, gates=[gate])
    assert v.decision is Decision.WAIT
    assert v.binding == gate


def test_the_config_file_overrides_defaults_and_rejects_unknown_keys(tmp_path: Path) -> None:
    """Missing keys take their defaults; a typo is one clear error."""
    path = tmp_path / "review.yaml"
    path.write_text(
        "precision_target: 0.9\nmin_labelled: 100\nsampling_rates: {routing: 0.5}\n", encoding="utf-8"
    )
    config = load_config(path)
    assert config == DEFAULTS.model_copy(
        update={"precision_target": 0.9, "min_labelled": 100, "sampling_rates": {"routing": 0.5}}
    )
    path.write_text("precison_target: 0.9\n", encoding="utf-8")
    with pytest.raises(BadReviewConfig, match="precison_target"):
        load_config(path)
    assert load_config(None) == DEFAULTS


def test_shipped_example_config_validates() -> None:
    """dashboards/review.yaml (the documented defaults) loads and equals the defaults."""
    assert load_config(Path(__file__).parents[2] / "dashboards" / "review.yaml") == DEFAULTS


def test_every_check_of_a_review_is_in_the_rule_book_with_its_kind(generated_review: Review) -> None:
    """judge() applies only rules the book lists, each with the book's kind; a wait's label gates say so.

    The banner reads a rule's kind from the book (a hard limit is a reject rule), never from its name.
    """
    checks = [k for s in generated_review.sections for v in s.verdicts.values() for k in v.checks]
    assert checks
    assert {k.rule for k in checks} <= set(KINDS)
    assert all(k.kind == KINDS[k.rule] for k in checks)
    assert {k.rule for k in checks if k.kind == Kind.LABEL_GATE} <= set(LABEL_GATES)
    assert {r for r, kind in KINDS.items() if kind == Kind.REJECT} >= set(HARD_LIMITS)
    assert Check("a gate another module adds", passed=False, detail="d").kind == Kind.GO

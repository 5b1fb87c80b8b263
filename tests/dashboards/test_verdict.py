"""The verdict rules on crafted marts: one case each of go, wait (with labels needed) and reject."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from dashboards.config import DEFAULTS, ReviewConfig, load_config
from dashboards.errors import BadReviewConfig
from dashboards.evidence import gather
from dashboards.marts import CANDIDATE, Marts
from dashboards.policies import Replayed
from dashboards.verdict import Decision, clopper_pearson, decide
from pipelines.policy import Policy

WEEK, TYPE, CAND = "2026-W48", "routing", "gemma@abcdef123456/Q4_K_M"


def crafted(
    *,
    labelled: int = 2000,
    accepted_labelled: int = 1000,
    accepted_correct: int = 995,
    coverage: float = 0.5,
    severe: int = 0,
    ece_alert: bool = False,
    band: str = "stable",
    p99: float = 120.0,
    cost_usd: float = 0.05,
) -> Marts:
    """One decision type, one candidate, one week: only the columns the rules read."""
    key = {"decision_type": TYPE, "week": WEEK, CANDIDATE: CAND}
    frames = {
        "funnel": pd.DataFrame([{"decision_type": TYPE, "week": WEEK}]),
        "agreement": pd.DataFrame(
            [{**key, "scored": 2 * labelled, "labelled": labelled, "severe_errors": severe}]
        ),
        "selective": pd.DataFrame(
            [
                {
                    **key,
                    "accepted": 2 * accepted_labelled,
                    "coverage": coverage,
                    "accepted_labelled": accepted_labelled,
                    "accepted_correct": accepted_correct,
                }
            ]
        ),
        "drift": pd.DataFrame(
            [{**key, "ece_alert": ece_alert, "confidence_psi_band": band, "mix_psi_band": "stable"}]
        ),
        "latency": pd.DataFrame([{"decision_type": TYPE, "week": WEEK, "scorer_p99_ms": p99}]),
        "cost": pd.DataFrame(
            [
                {
                    "decision_type": TYPE,
                    "week": WEEK,
                    "model_name": "gemma",
                    "cost_usd": cost_usd,
                    "accepted": 2 * accepted_labelled,
                }
            ]
        ),
        "risk_coverage": pd.DataFrame(
            [
                {
                    **key,
                    "threshold": 0.9,
                    "coverage": coverage,
                    "accepted": accepted_labelled,
                    "accepted_correct": accepted_correct,
                }
            ]
        ),
    }
    return Marts(frames, WEEK, "crafted")


def replayed(
    *,
    accepted_labelled: int = 1000,
    accepted_correct: int = 995,
    coverage: float = 0.5,
    chosen_on: str = "2026-W47",
) -> Replayed:
    """A policy of the crafted candidate chosen on ``chosen_on``; its replay's counts on the review week."""
    policy = Policy(TYPE, "default", "ab" * 32, CAND, chosen_on, "2027-01-31", 0.95, 0.05, 100, "review")
    result = {
        "accepted": 2 * accepted_labelled,
        "accepted_labelled": accepted_labelled,
        "accepted_correct": accepted_correct,
        "coverage": coverage,
    }
    return Replayed(policy, WEEK, result)


IN_SAMPLE = DEFAULTS.model_copy(update={"require_policy": False})
"""The rules with go allowed on the week's own (in-sample) thresholds."""


def verdict_of(
    marts: Marts, config: ReviewConfig = IN_SAMPLE, policy: Replayed | None = None
) -> tuple[Decision, tuple[str, ...], int]:
    """Decide the crafted candidate."""
    v = decide(gather(marts, TYPE, CAND, config.min_coverage, policy), config)
    return v.decision, v.reasons, v.labels_needed


def test_go_when_every_rule_holds() -> None:
    """995/1000 accepted correct (lower bound 0.988), 50% coverage, no alert, within budgets: go."""
    decision, reasons, _ = verdict_of(crafted())
    assert decision is Decision.GO, reasons
    decision, reasons, _ = verdict_of(crafted(), DEFAULTS, replayed())
    assert decision is Decision.GO, reasons


def test_by_default_go_needs_an_out_of_sample_policy() -> None:
    """The same week without a policy, or with one chosen on the review week itself, waits by default."""
    for policy in (None, replayed(chosen_on=WEEK)):
        decision, reasons, _ = verdict_of(crafted(), DEFAULTS, policy)
        assert decision is Decision.WAIT
        assert any("out-of-sample policy" in r and "in-sample" in r for r in reasons), reasons


def test_the_go_rule_reads_the_policy_replay_not_the_in_sample_numbers() -> None:
    """In-sample 995/1000 but the policy on the review week 960/1000 (lower bound 0.946 < 0.95): wait.

    And the other way round: in-sample 150 accepted (bound under target), the replay's 995/1000: go.
    """
    decision, reasons, _ = verdict_of(crafted(), DEFAULTS, replayed(accepted_correct=960))
    assert decision is Decision.WAIT
    assert any(
        "precision lower bound" in r and "out of sample: policy chosen on 2026-W47" in r for r in reasons
    )
    decision, reasons, _ = verdict_of(
        crafted(accepted_labelled=150, accepted_correct=146), DEFAULTS, replayed()
    )
    assert decision is Decision.GO, reasons
    decision, reasons, _ = verdict_of(crafted(), DEFAULTS, replayed(coverage=0.1))
    assert decision is Decision.WAIT
    assert any("coverage above minimum" in r for r in reasons)


@pytest.mark.parametrize(
    ("change", "failed_rule"),
    [
        ({"ece_alert": True}, "no ECE alert"),
        ({"band": "significant"}, "PSI below blocking band"),
        ({"coverage": 0.1}, "coverage above minimum"),
        ({"p99": 800.0}, "p99 within budget"),
        ({"cost_usd": 3.0}, "cost within budget"),
    ],
)
def test_each_go_rule_alone_turns_go_into_wait(change: dict[str, object], failed_rule: str) -> None:
    """Breaking one go rule (but no reject rule) waits, naming that rule."""
    decision, reasons, _ = verdict_of(crafted(**change))  # type: ignore[arg-type]
    assert decision is Decision.WAIT
    assert any(failed_rule in r for r in reasons)


def test_wait_says_how_many_more_labels_are_needed() -> None:
    """With 100 labels (min 500) the verdict waits and asks for at least the 400 missing."""
    decision, reasons, needed = verdict_of(crafted(labelled=100, accepted_labelled=50, accepted_correct=50))
    assert decision is Decision.WAIT
    assert needed >= 400
    assert any("more labelled decisions needed" in r for r in reasons)


def test_wait_counts_labels_for_the_precision_bound() -> None:
    """97% observed on 150 accepted (bound under 0.95): enough labels overall, more to prove precision."""
    decision, _, needed = verdict_of(crafted(accepted_labelled=150, accepted_correct=146))
    assert decision is Decision.WAIT
    assert needed > 0
    accepted = 150 + math.ceil(needed * 150 / 2000)
    assert clopper_pearson(math.floor(accepted * 146 / 150), accepted, 0.95)[0] >= 0.95
    fewer = 150 + math.ceil(needed * 0.8 * 150 / 2000)
    assert clopper_pearson(math.floor(fewer * 146 / 150), fewer, 0.95)[0] < 0.95


@pytest.mark.parametrize(
    ("change", "failed_rule"),
    [
        ({"severe": 100}, "severe-error rate within limit"),
        ({"accepted_correct": 800}, "precision can reach target at minimum coverage"),
        ({"p99": 5000.0}, "p99 within hard budget"),
        ({"cost_usd": 50.0}, "cost within hard budget"),
    ],
)
def test_reject_rules(change: dict[str, object], failed_rule: str) -> None:
    """Severe errors over the limit, precision upper bound under target, a hard budget broken: reject."""
    decision, reasons, _ = verdict_of(crafted(**change))  # type: ignore[arg-type]
    assert decision is Decision.REJECT
    assert any(failed_rule in r for r in reasons)


def test_no_statistical_reject_without_enough_labels() -> None:
    """A bad precision on 100 labels waits rather than rejects."""
    decision, _, _ = verdict_of(crafted(labelled=100, accepted_labelled=50, accepted_correct=30))
    assert decision is Decision.WAIT


def test_the_config_file_overrides_defaults_and_rejects_unknown_keys(tmp_path: Path) -> None:
    """Missing keys take their defaults; a typo is one clear error."""
    path = tmp_path / "review.yaml"
    path.write_text("precision_target: 0.9\nmin_labelled: 100\n", encoding="utf-8")
    config = load_config(path)
    assert config == replace_model(DEFAULTS, precision_target=0.9, min_labelled=100)
    path.write_text("precison_target: 0.9\n", encoding="utf-8")
    with pytest.raises(BadReviewConfig, match="precison_target"):
        load_config(path)
    assert load_config(None) == DEFAULTS


def replace_model(config: ReviewConfig, **changes: object) -> ReviewConfig:
    """A copy of ``config`` with ``changes``."""
    return config.model_copy(update=changes)


def test_shipped_example_config_validates() -> None:
    """dashboards/review.yaml (the documented defaults) loads and equals the defaults."""
    assert load_config(Path(__file__).parents[2] / "dashboards" / "review.yaml") == DEFAULTS

"""The distributions behind ``generate.py``.

Synthetic decisions whose properties are known by construction.

For each scored decision the model's probabilities ``p`` come from Gaussian logits that favour an
*intended* option (drawn from the week's mix); the outcome is then drawn from ``softmax(t · log p)``.
With ``t = 1`` the model is calibrated by construction (top-label ECE only sampling noise); ``t < 1``
makes it overconfident. The drift week changes both ``t`` and the mix, so drift must alert there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

REVIEW_OPTION = "review"
"""The catalog's none-of-the-above id: an outcome outside the declared options."""

HOUR_US = 3_600_000_000


@dataclass(frozen=True)
class DecisionSpec:
    """One decision type: its options, true mix, and which options are high-consequence."""

    name: str
    options: tuple[str, ...]
    mix: tuple[float, ...]
    share: float
    high_consequence: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fleet:
    """One scorer deployment: backend, device, instance type and its latency (lognormal median, ms)."""

    backend: str
    device: str
    instance_type: str
    scorer_median_ms: float
    share: float


@dataclass(frozen=True)
class ModelSpec:
    """A pinned model identity and how sharp its logits are."""

    name: str
    sha256: str
    quantization: str
    signal: float
    share: float


DEFAULT_TYPES = (
    DecisionSpec(
        "ticket_routing",
        ("billing", "technical", "account", "sales", "refund"),
        (0.35, 0.30, 0.15, 0.12, 0.08),
        0.6,
        ("refund",),
    ),
    DecisionSpec("priority", ("low", "normal", "high", "urgent"), (0.30, 0.45, 0.18, 0.07), 0.4, ("urgent",)),
)
DEFAULT_FLEETS = (
    Fleet("sagemaker", "cpu", "ml.c6i.8xlarge", 180.0, 0.5),
    Fleet("sagemaker", "cuda", "ml.g6e.xlarge", 25.0, 0.5),
)
DEFAULT_MODELS = (
    ModelSpec("gemma-3-270m", "a5fd3b62" + "0" * 56, "Q4_K_M", 3.2, 0.8),
    ModelSpec("gemma-3-1b", "7c1e55d0" + "1" * 56, "Q4_K_M", 4.5, 0.2),
)
NOT_SCORED = (  # (status, reason, share of offered decisions)
    ("dropped", "not_sampled", 0.10),
    ("dropped", "queue_full", 0.010),
    ("dropped", "rate_limited", 0.005),
    ("timeout", "scorer_timeout", 0.005),
    ("error", "scorer_error", 0.002),
    ("invalid_response", "bad_probabilities", 0.001),
    ("lost", "crash_recovery", 0.0005),
)


@dataclass(frozen=True)
class IdentityChange:
    """A candidate's identity changing mid-week.

    From ``week``'s Thursday 00:00 UTC on, ``field`` (the model's ``kv_type``, or ``normalization``) takes
    ``value``.
    """

    week: int
    field: str = "kv_type"
    value: str = "q8_0"


CHALLENGER = ModelSpec("gemma-3-1b", "7c1e55d0" + "1" * 56, "Q8_0", 4.5, 1.0)
"""A second candidate scored on the same decisions (``Knobs.challenger``), sharper than the default."""
MORE_CHALLENGERS = (
    ModelSpec("gemma-3-4b", "3d9a41f0" + "2" * 56, "Q4_K_M", 5.5, 1.0),
    ModelSpec("gemma-3-270m", "a5fd3b62" + "0" * 56, "Q8_0", 3.5, 1.0),
)
"""Two more candidates (``Knobs.more_challengers``): with ``CHALLENGER``, four candidates on one decision."""
GOOD_MODELS = (ModelSpec("gemma-3-1b", "7c1e55d0" + "1" * 56, "Q4_K_M", 12.0, 1.0),)
"""One identity, sharp enough to be right on about 98% of the decisions: a candidate that can go."""
GPU_FLEETS = (Fleet("sagemaker", "cuda", "ml.g6e.xlarge", 25.0, 1.0),)
"""Every decision on the GPU fleet: a p99 well within the review's 500 ms budget."""


@dataclass(frozen=True)
class AuditKnobs:
    """How the records generator's simulated auditor answers every week's audit sample (``generate_audits``).

    It answers each sampled decision with the truth, but ``error_rate`` of its answers are another option
    (uniformly). The sample is drawn as ``semif-shadow audit sample`` draws it, with these settings.
    """

    error_rate: float = 0.0
    disagreements: int = 200
    agreement_rate: float = 0.02
    overlap: float = 0.1
    seed: int = 0


@dataclass(frozen=True)
class Knobs:
    """The known properties of the generated data."""

    label_rate: float = 0.85
    review_rate: float = 0.01
    duplicate_outcome_rate: float = 0.02
    temperature: float = 1.0
    drift_temperature: float = 0.55
    drift_mix_shift: float = 0.25
    types: tuple[DecisionSpec, ...] = DEFAULT_TYPES
    fleets: tuple[Fleet, ...] = DEFAULT_FLEETS
    models: tuple[ModelSpec, ...] = DEFAULT_MODELS
    not_scored: tuple[tuple[str, str, float], ...] = field(default=NOT_SCORED)
    challenger: ModelSpec | None = None
    """Candidate ``challenger``: every decision offered to the default candidate is offered to it too."""
    more_challengers: tuple[ModelSpec, ...] = ()
    """Candidates ``challenger-2``, ``challenger-3``...: as ``challenger``, each with its own draws."""
    identity_change: IdentityChange | None = None
    """The default candidate's identity change, if any."""
    production_error_rate: float = 0.0
    """The share of decisions production gets wrong: its outcome is then another option than the truth
    (uniformly), so agreement with production differs from correctness (what an audit finds)."""


def week_mix(spec: DecisionSpec, drifted: bool, shift: float) -> np.ndarray:
    """The true option mix of a week; a drifted week moves ``shift`` of the mass to the last option."""
    mix = np.asarray(spec.mix, dtype=np.float64)
    if drifted:
        mix = mix * (1 - shift)
        mix[-1] += shift
    return np.asarray(mix / mix.sum(), dtype=np.float64)


def probabilities(rng: np.random.Generator, intended: np.ndarray, k: int, signal: np.ndarray) -> np.ndarray:
    """The model's softmax over ``k`` options.

    Gaussian logits with ``signal`` added to the intended one, scaled per decision by a uniform difficulty in
    [0.2, 2] (some decisions are easy, some hard).
    """
    logits = rng.normal(0.0, 1.0, size=(intended.size, k))
    logits[np.arange(intended.size), intended] += signal * rng.uniform(0.2, 2.0, intended.size)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return np.asarray(p / p.sum(axis=1, keepdims=True))


def draw_outcomes(rng: np.random.Generator, p: np.ndarray, temperature: float) -> np.ndarray:
    """Outcome index per row from ``softmax(temperature · log p)`` (inverse-CDF sampling, vectorized)."""
    q = np.power(p, temperature)
    q /= q.sum(axis=1, keepdims=True)
    u = rng.random((p.shape[0], 1))
    return np.asarray(np.minimum((q.cumsum(axis=1) < u).sum(axis=1), p.shape[1] - 1), dtype=np.int64)


def draw_statuses(
    rng: np.random.Generator,
    n: int,
    not_scored: tuple[tuple[str, str, float], ...],
) -> tuple[np.ndarray, np.ndarray]:
    """Status and reason indices: index ``len(not_scored)`` means scored."""
    shares = np.array([s for _, _, s in not_scored] + [1.0 - sum(s for _, _, s in not_scored)])
    idx = rng.choice(shares.size, size=n, p=shares)
    return idx, idx == shares.size - 1


def draw_latency(rng: np.random.Generator, median_ms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scorer and end-to-end milliseconds.

    Lognormal scorer time plus exponential queueing and 2 ms overhead.
    """
    scorer = median_ms * np.exp(rng.normal(0.0, 0.45, median_ms.size))
    queue = rng.exponential(4.0, median_ms.size)
    return scorer, scorer + queue + 2.0


def outcome_delay_us(rng: np.random.Generator, n: int) -> np.ndarray:
    """How long after the proposal an outcome arrives: lognormal, median 2 h, a tail of several days."""
    return (np.exp(rng.normal(np.log(2.0), 1.5, n)) * HOUR_US).astype(np.int64)

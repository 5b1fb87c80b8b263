"""The review's rules and budgets: a YAML file whose every key has a documented default.

An empty file (or none) gives the defaults below; ``docs/review.md`` lists them with their meaning. The
report prints the values it applied, so a verdict can always be traced to its rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dashboards.errors import BadReviewConfig

if TYPE_CHECKING:
    from pathlib import Path


class ReviewConfig(BaseModel):
    """Rules (what must hold for go, what forces reject) and budgets of the weekly review."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    precision_target: float = Field(
        0.95, gt=0, lt=1, description="precision the accepted decisions must reach"
    )
    confidence: float = Field(
        0.95, gt=0, lt=1,
        description="two-sided level of the anytime-valid bounds: each one-sided bound errs (1 - this) / 2",
    )
    min_labelled: int = Field(
        500, ge=1, description="labelled decisions a candidate needs before go or reject"
    )
    min_coverage: float = Field(
        0.2, ge=0, le=1, description="share of scored decisions the policy must accept"
    )
    max_severe_rate: float = Field(
        0.01, ge=0, le=1, description="severe errors / labelled above which the verdict is reject"
    )
    p99_budget_ms: float = Field(500.0, gt=0, description="scorer p99 (ms) within which go is allowed")
    p99_hard_ms: float = Field(2000.0, gt=0, description="scorer p99 (ms) above which the verdict is reject")
    cost_budget_usd: float = Field(
        0.001, gt=0, description="cost per accepted decision (USD) within which go is allowed"
    )
    cost_hard_usd: float = Field(
        0.01, gt=0, description="cost per accepted decision (USD) above which the verdict is reject"
    )
    block_on_ece_alert: bool = Field(default=True, description="an ECE alert in the week prevents go")
    require_policy: bool = Field(
        default=True,
        description="go needs an out-of-sample policy replayed on the week (--policy); "
        "false: the week's own in-sample thresholds may give go",
    )
    block_on_psi_band: str = Field(
        "significant", pattern="^(moderate|significant)$", description="PSI band from which go is prevented"
    )
    sampling_rates: dict[str, float] = Field(
        default_factory=dict,
        description="configured sampling rate per decision type (the catalog's sampling.rate): the "
        "sample-ratio check tests each candidate's sampled / offered against it; without one, the candidates "
        "against each other",
    )
    srm_p_value: float = Field(
        0.001, gt=0, lt=1, description="p-value below which the sample-ratio check fails (prevents go)"
    )
    min_overlap: float = Field(
        0.8, ge=0, le=1, description="share of decisions two candidates must both have scored and labelled"
    )
    max_label_shift: float = Field(
        0.2, gt=0,
        description="largest standardized difference (Cohen's d) of confidence, labelled vs unlabelled",
    )
    champion: str | None = Field(
        None,
        description="the candidate the scorecard compares every other with (a catalog name); "
        "default: the one that scored most decisions",
    )
    audit_url: str = Field(
        "http://127.0.0.1:8490",
        pattern="^https?://",
        description="the audit workbench the gallery links each decision to ({audit_url}/decisions/{id})",
    )
    gallery_max: int = Field(
        12, ge=0, le=200, description="decisions the gallery shows per decision type and candidate"
    )
    correctness_margin: float = Field(
        0.02, ge=0, lt=1,
        description="where a decision type has audits, go needs the lower bound of the candidate's audited "
        "correctness minus production's, on the same decisions, to be at least minus this (non-inferiority)",
    )
    require_audits: bool = Field(
        default=False,
        description="go needs an audit sample of the decision type (without one: no audited gate)",
    )


DEFAULTS = ReviewConfig()


def load_config(path: Path | None) -> ReviewConfig:
    """The config in ``path`` (YAML mapping; missing keys take their defaults), or the defaults."""
    if path is None:
        return DEFAULTS
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return ReviewConfig.model_validate(data)
    except (OSError, yaml.YAMLError) as exc:
        raise BadReviewConfig(f"cannot read review config {path}: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise BadReviewConfig(f"review config {path}: {problems}") from exc


def rules_applied(config: ReviewConfig) -> list[tuple[str, str, str]]:
    """``(key, value, meaning)`` for every rule and budget, for the report."""
    return [
        (name, str(getattr(config, name)), field.description or "")
        for name, field in ReviewConfig.model_fields.items()
    ]

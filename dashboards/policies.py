"""Out-of-sample evidence for the go rule: `semif.policy/v1` files replayed on the review week.

A policy (``semif-shadow pipelines policy choose``) holds per-option thresholds chosen on one week for one
candidate identity. The marts keep only each week's own (in-sample) thresholds, not the counts at every
threshold, so the replay reads the review week's decisions from the records (``pipelines.policy.replay``,
one in-memory pipelines run over the week): accepted, labelled and correct at the policy's thresholds. A
policy chosen on the review week itself is in-sample and is not used for go.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dashboards.errors import BadPolicy
from pipelines.errors import PipelinesError
from pipelines.policy import Policy, load_policy, replay
from pipelines.policy_cli import settings_for, week_connection

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path


@dataclass(frozen=True)
class Replayed:
    """One policy and what it did on the review week (``pipelines.policy.replay``'s numbers)."""

    policy: Policy
    week: str
    result: dict[str, Any]
    path: str = ""
    """The policy file's name, as given (the report's provenance)."""
    sha256: str = ""
    """The policy file's sha256."""

    @property
    def key(self) -> tuple[str, str]:
        """``(decision_type, grouping key)`` the policy is valid for."""
        return self.policy.decision_type, self.policy.model_key

    @property
    def in_sample(self) -> bool:
        """Whether the policy was chosen on the week it is replayed on."""
        return self.policy.chosen_on == self.week

    def count(self, name: str) -> int:
        """A count of the replay (``accepted``, ``accepted_labelled``, ``accepted_correct``...)."""
        return int(self.result.get(name) or 0)

    @property
    def coverage(self) -> float:
        """Accepted / scored at the policy's thresholds on the review week."""
        return float(self.result.get("coverage") or 0.0)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def replay_policies(
    paths: Sequence[Path],
    records: str,
    week: str,
    *,
    as_of: str | None = None,
    s3_endpoint: str | None = None,
) -> list[Replayed]:
    """Load every policy file and replay it on ``week`` of the records under ``records``; one run for all."""
    try:
        policies = [load_policy(path) for path in paths]
        con = week_connection(settings_for(s3_endpoint), records, week, as_of)
        try:
            replayed = [
                Replayed(policy, week, replay(con, policy, week), path.name, _sha256(path))
                for policy, path in zip(policies, paths, strict=True)
            ]
        finally:
            con.close()
    except PipelinesError as exc:
        raise BadPolicy(f"policy: {exc}") from exc
    keys = [r.key for r in replayed]
    if len(set(keys)) != len(keys):
        raise BadPolicy("policy: two policy files for the same decision type and identity")
    return replayed

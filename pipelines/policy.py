"""A per-option threshold policy: chosen on one week, written as versioned JSON, replayed on another week.

Phases: ``choose`` (after a run over week W: one candidate identity's `thresholds` rows -> `Policy`) ->
``Policy.dumps`` / ``load_policy`` (the file a policy layer outside the model loads) -> ``replay`` (after a
run over another week: the policy's thresholds applied to the decisions scored under its identity). A
policy is valid for one model identity only: replaying it on a week whose records of that candidate hold no
decision under that identity raises ``PolicyMismatch``, naming both.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, Final

from scipy.stats import beta

from pipelines.errors import BadArgument, PolicyMismatch

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

POLICY_FORMAT: Final = "semif.policy/v1"
INTERVAL_LEVEL: Final = 0.95
"""Level of the two-sided Clopper-Pearson interval of the replayed precision."""


@dataclass(frozen=True)
class Policy:
    """A versioned policy: the identity it is valid for and its per-option rules.

    Each option has its grid index and threshold (null: never accepted, the abstain action) and the evidence
    of the week it was chosen on.
    """

    decision_type: str
    candidate: str
    model_identity_sha256: str
    model_key: str
    chosen_on: str
    as_of: str
    precision_target: float
    alpha: float
    grid: int
    abstain_action: str
    options: list[dict[str, Any]] = field(default_factory=list)
    format: str = POLICY_FORMAT

    def dumps(self) -> str:
        """The policy as indented JSON (the keys in declaration order)."""
        return json.dumps(asdict(self), indent=2) + "\n"


def load_policy(path: Path) -> Policy:
    """Read a policy file; a file of another format is refused."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BadArgument(f"cannot read {path}: {exc}", "policy") from exc
    if not isinstance(data, dict) or data.get("format") != POLICY_FORMAT:
        raise BadArgument(f"{path} is not a {POLICY_FORMAT} policy", "policy")
    return Policy(**data)


def query(name: str) -> str:
    """The text of ``queries/<name>.sql``."""
    return (resources.files("pipelines") / "queries" / f"{name}.sql").read_text()


def identities_of(
    con: duckdb.DuckDBPyConnection, decision_type: str, week: str, candidate: str
) -> list[tuple[str, str]]:
    """``(model_identity_sha256, model_key)`` of every identity the candidate scored that week."""
    rows = con.execute(
        "select model_identity_sha256, model_key from identities where decision_type = $t and week = $w "
        "and candidate = $c order by model_key",
        {"t": decision_type, "w": week, "c": candidate},
    ).fetchall()
    return [(str(sha), str(key)) for sha, key in rows]


def choose(  # noqa: PLR0913  (what the command asks for)
    con: duckdb.DuckDBPyConnection,
    decision_type: str,
    *,
    week: str,
    candidate: str,
    identity: str | None,
    abstain_action: str,
) -> Policy:
    """The policy of one candidate identity from a run over ``week`` (``identity``: a sha256 prefix)."""
    found = [(sha, key) for sha, key in identities_of(con, decision_type, week, candidate)
             if identity is None or sha.startswith(identity)]
    if len(found) != 1:
        listed = "; ".join(f"{sha[:12]} ({key})" for sha, key in found) or "none"
        raise BadArgument(f"{candidate} on {decision_type} in {week}: one identity needed, found {listed}",
                          "identity")
    sha, key = found[0]
    bound = {"decision_type": decision_type, "week": week, "model_key": key}
    rows = con.execute(query("policy_evidence"), bound)
    names = [d[0] for d in rows.description]
    options = [dict(zip(names, row, strict=True)) for row in rows.fetchall()]
    params = con.execute("select precision_target, alpha, grid, as_of::varchar from run_params").fetchone()
    assert params is not None
    return Policy(decision_type, candidate, sha, key, week, params[3], params[0], params[1], params[2],
                  abstain_action, options)


def replay(con: duckdb.DuckDBPyConnection, policy: Policy, week: str) -> dict[str, Any]:
    """What the policy would have done on ``week``.

    Coverage, precision with its interval, severe errors, decisions sent to the abstain action, cost per
    accepted decision.
    """
    present = identities_of(con, policy.decision_type, week, policy.candidate)
    if policy.model_identity_sha256 not in {sha for sha, _ in present}:
        listed = "; ".join(f"{sha[:12]} ({key})" for sha, key in present) or "no decision"
        raise PolicyMismatch(
            f"the policy is valid for identity {policy.model_identity_sha256[:12]} ({policy.model_key}); "
            f"{policy.candidate} on {policy.decision_type} in {week} was scored under {listed}: refused"
        )
    con.execute("create or replace temp table cfg_policy (option_id varchar, grid_index integer)")
    con.executemany("insert into cfg_policy values (?, ?)",
                    [[o["option_id"], o["grid_index"]] for o in policy.options])
    rows = con.execute(query("policy_replay"),
                       {"decision_type": policy.decision_type, "week": week, "model_key": policy.model_key})
    names = [d[0] for d in rows.description]
    result = dict(zip(names, rows.fetchone() or (), strict=True))
    x, n = result["accepted_correct"], result["accepted_labelled"]
    tail = (1 - INTERVAL_LEVEL) / 2
    result["precision_low"] = float(beta.ppf(tail, x, n - x + 1)) if x > 0 else 0.0
    result["precision_high"] = float(beta.ppf(1 - tail, x + 1, n - x)) if x < n else 1.0
    return {"week": week, "model_key": policy.model_key, "abstain_action": policy.abstain_action} | result

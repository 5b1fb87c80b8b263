"""A small audit week for the workbench tests: a catalog, records, an audit sample file.

The records are written by the sidecar's record store; the sample file has the layout ``audit sample``
writes.

Each decision's production outcome and proposals are drawn from a seed, with probabilities of a
recognisable form (``0.8137...``), so a test can look for them in what the page sends.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from audit.workbench.settings import WorkbenchSettings
from contracts.audit_samples import sample_path
from shadow.records.settings import RecordSettings
from shadow.records.store import RecordStore

if TYPE_CHECKING:
    from pathlib import Path

WEEK = "2026-W48"
TYPE = "tickets"
TOKEN_ENV = "AUDIT_TEST_TOKEN_TICKETS"  # noqa: S105  (a variable name)
TOKEN = "t0ken-for-tickets-0123456789"  # noqa: S105  (a test's sign-in token)
OPTIONS = [("billing", "Billing"), ("technical", "Technical support"), ("account", "Account management"),
           ("review", "A human should review this ticket")]
SAMPLE_ID = "s-2026-W48-tickets"
MONDAY = dt.datetime(2026, 11, 23, 9, 0, tzinfo=dt.UTC)
HASHED = "hmac-sha256:" + "ab12" * 16


def catalog(path: Path, token_env: str | None = TOKEN_ENV) -> Path:
    """A catalog with one decision type whose state is stored, one field hashed and one removed."""
    dtype: dict[str, Any] = {
        "question": "Which team should handle this support ticket?",
        "options": [{"id": i, "text": t} for i, t in OPTIONS], "review_option": "review",
        "state": {"include": [], "remove": ["customer.email"], "hash": ["customer.id"], "store": True},
        "scorer": {"backend": "semif_http", "endpoint": "http://127.0.0.1:9"},
        "candidates": {"challenger": {"backend": "semif_http", "endpoint": "http://127.0.0.1:9"}},
        "experiment_ends_at": "2099-01-01T00:00:00Z"}
    if token_env:
        dtype["auth_token_env"] = token_env
    path.write_text(yaml.safe_dump({"version": 1, "decision_types": {TYPE: dtype}}), encoding="utf-8")
    return path


@dataclass
class Decision:
    """One decision as written: what production did, what each candidate proposed."""

    decision_id: str
    state: dict[str, Any]
    outcome: str
    proposals: dict[str, tuple[str, list[float]]] = field(default_factory=dict)


def decisions(n: int, seed: int = 3, subject: str | None = None) -> list[Decision]:
    """``n`` decisions with seeded outcomes and proposals (``subject`` overrides every subject)."""
    rng = random.Random(seed)  # noqa: S311  (test data, not a secret)
    ids = [o for o, _ in OPTIONS]
    out = []
    for i in range(n):
        state = {"subject": subject or f"Ticket {i}: cannot log in",
                 "body": f"Customer writes about case {i}.",
                 "customer": {"id": HASHED, "plan": rng.choice(["free", "pro"])}}
        proposals = {}
        for candidate in ("default", "challenger"):
            raw = [rng.random() + 0.01 for _ in ids]
            probabilities = [round(r / sum(raw), 10) for r in raw]
            proposals[candidate] = (ids[probabilities.index(max(probabilities))], probabilities)
        out.append(Decision(f"d{i:04d}", state, rng.choice(ids), proposals))
    return out


async def write_records(root: Path, spool: Path, items: list[Decision]) -> None:
    """Proposals (every candidate) and production outcomes, through the sidecar's record store."""
    await write_records_to(str(root), spool, items)


async def write_records_to(root: str, spool: Path, items: list[Decision]) -> None:
    """``write_records`` under a folder or an ``s3://`` root (S3 settings from the environment)."""
    settings = RecordSettings(root=root, spool_dir=spool, writer_id="sidecar-test")
    ids = [o for o, _ in OPTIONS]
    async with RecordStore(settings) as store:
        for i, item in enumerate(items):
            at = MONDAY + dt.timedelta(minutes=7 * i)
            state = json.dumps(item.state, sort_keys=True, separators=(",", ":"))
            for candidate, (proposal, probabilities) in item.proposals.items():
                await store.proposal({
                    "decision_id": item.decision_id, "decision_type": TYPE, "received_at": at,
                    "sampled": True,
                    "status": "scored", "option_ids": ids, "probabilities": probabilities,
                    "proposal": proposal, "proposal_probability": max(probabilities), "candidate": candidate,
                    "state": state, "state_sha256": "0" * 64})
            await store.outcome({"decision_id": item.decision_id, "decision_type": TYPE,
                                 "outcome": item.outcome, "outcome_at": at + dt.timedelta(hours=1),
                                 "source": "api", "in_options": True})


def write_sample(root: Path, ids: list[str], double: set[str] | None = None, iso_week: str = WEEK,
                 decision_type: str = TYPE) -> Path:
    """The week's audit sample file (``audit sample``'s layout), one stratum, equal probabilities."""
    path = root / sample_path(iso_week, decision_type)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(sample_table(ids, double, iso_week, decision_type), path)
    return path


def sample_table(ids: list[str], double: set[str] | None = None, iso_week: str = WEEK,
                 decision_type: str = TYPE) -> pa.Table:
    """The rows of a sample file (``contracts.audit_samples``): one stratum, equal probabilities."""
    return pa.table({"sample_id": [SAMPLE_ID] * len(ids), "decision_id": ids,
                     "decision_type": [decision_type] * len(ids), "week": [iso_week] * len(ids),
                     "stratum": ["agree"] * len(ids), "inclusion_probability": [0.5] * len(ids),
                     "double_audit": [i in (double or set()) for i in ids]})


async def build(tmp: Path, n: int, **kwargs: Any) -> tuple[Path, Path, list[Decision]]:
    """``(records root, catalog, decisions)``: ``n`` decisions written and all of them sampled."""
    root = tmp / "records"
    items = decisions(n, **kwargs)
    await write_records(root, tmp / "sidecar-spool", items)
    write_sample(root, [d.decision_id for d in items])
    return root, catalog(tmp / "catalog.yaml"), items


GENERATED_TYPE = "ticket_routing"
GENERATED_OPTIONS = [("billing", "Billing"), ("technical", "Technical support"), ("account", "Account"),
                     ("sales", "Sales"), ("refund", "Refunds")]
"""``pipelines generate``'s ticket routing options, in its order."""


def generated_catalog(path: Path) -> Path:
    """A catalog for ``pipelines generate``'s ticket routing type (state not stored: it generates none)."""
    dtype = {"question": "Which team should handle this support ticket?",
             "options": [{"id": i, "text": t} for i, t in GENERATED_OPTIONS],
             "scorer": {"backend": "semif_http", "endpoint": "http://127.0.0.1:9"},
             "experiment_ends_at": "2099-01-01T00:00:00Z", "auth_token_env": TOKEN_ENV}
    catalog_yaml = yaml.safe_dump({"version": 1, "decision_types": {GENERATED_TYPE: dtype}})
    path.write_text(catalog_yaml, encoding="utf-8")
    return path


def settings_for(tmp: Path, root: Path, catalog: Path, **overrides: object) -> WorkbenchSettings:
    """Workbench settings over a built week, with a spool of its own under ``tmp``."""
    return WorkbenchSettings(root=str(root), week=WEEK, catalog=catalog, spool_dir=tmp / "audit-spool",
                             writer_id="audit-test", **overrides)  # type: ignore[arg-type]

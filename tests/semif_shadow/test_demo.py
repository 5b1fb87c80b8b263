"""`semif-shadow demo` end to end, and its clean-up.

What was sent is in the records, the marts match the records, the report matches the marts; Ctrl-C
leaves no process and no port behind.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from contracts.records import SOURCE_AUDIT
from semif_shadow.demo import summary, trial
from semif_shadow.demo.catalog import CANDIDATES
from semif_shadow.demo.workload import OUT_OF_SCOPE_ACTIONS

pytestmark = pytest.mark.own_process  # the demo forks its services with a preexec_fn: run apart

TODAY = dt.date(2026, 12, 1)  # the demo's weeks: 2026-W46, 2026-W47


def records(root: Path, dataset: str) -> list[dict[str, Any]]:
    """Every row of one records dataset."""
    return ds.dataset(root / dataset, format="parquet").to_table().to_pylist()


def week_of(at: dt.datetime) -> str:
    """ISO week label."""
    year, week, _ = at.isocalendar()
    return f"{year}-W{week:02d}"


def latest_outcomes(outcomes: list[dict[str, Any]]) -> dict[str, str]:
    """Production's latest outcome per decision (what the pipelines join; audits left out)."""
    out: dict[str, tuple[dt.datetime, str]] = {}
    for o in outcomes:
        if o["source"] == SOURCE_AUDIT:
            continue
        if o["decision_id"] not in out or o["outcome_at"] > out[o["decision_id"]][0]:
            out[o["decision_id"]] = (o["outcome_at"], o["outcome"])
    return {k: v[1] for k, v in out.items()}


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> trial.Result:
    """A 40-ticket demo over two simulated weeks, through the command's own code path."""
    out = tmp_path_factory.mktemp("demo")
    return trial.run(trial.DemoConfig(out=out, tickets=40, weeks=2, seed=11, today=TODAY, progress=False),
                     echo=lambda _line: None)


@pytest.mark.slow
def test_records_hold_what_was_sent(demo_run: trial.Result) -> None:
    """Each ticket sent is one proposals row per candidate, in its simulated week.

    Each router answer is an outcome (outside the options for out-of-scope actions); each ticket sent
    to review has its late outcome, the truth, later than the router's.
    """
    root = Path(demo_run.records_root)
    proposals, outcomes = records(root, "proposals"), records(root, "outcomes")
    sent = {s.ticket_id: s for s in demo_run.sent}
    truth = {t.ticket_id: t for t in demo_run.tickets}
    assert len(sent) == len(demo_run.tickets) > 0
    assert Counter((p["decision_id"], p["candidate"]) for p in proposals) == Counter(
        {(i, c): 1 for i in sent for c in CANDIDATES})
    for p in proposals:
        assert week_of(p["received_at"]) == demo_run.weeks[sent[p["decision_id"]].week]
        assert json.loads(p["state"])["body"] == truth[p["decision_id"]].body
        assert str(json.loads(p["state"])["customer"]["id"]).startswith("hmac-sha256:")
    by_source = {(o["decision_id"], o["source"]): o for o in outcomes}
    for ticket_id, s in sent.items():
        proxied = by_source[ticket_id, "proxy"]
        assert proxied["outcome"] == s.team
        assert proxied["in_options"] == (s.team not in OUT_OF_SCOPE_ACTIONS)
        late = by_source.get((ticket_id, "api"))
        assert (late is not None) == (s.team == "review")
        if late is not None:
            assert late["outcome"] == truth[ticket_id].truth
            assert late["outcome_at"] > proxied["outcome_at"]
    assert any(s.team == "review" for s in sent.values())
    assert {week_of(o["outcome_at"]) for o in outcomes} >= set(demo_run.weeks)


@pytest.mark.slow
def test_both_candidates_share_one_decode_per_ticket(demo_run: trial.Result) -> None:
    """The scorer's logit memo (``SCORER_LOGIT_MEMO``): a ticket's two candidates share one decode.

    The later call of a pair reuses every prompt token (without the memo the state is always decoded, so
    ``cached_tokens`` < ``prompt_tokens``) and gets the same raw logits, bit for bit.
    """
    by_ticket: dict[str, list[dict[str, Any]]] = {}
    for p in records(Path(demo_run.records_root), "proposals"):
        if p["status"] == "scored":
            by_ticket.setdefault(p["decision_id"], []).append(p)
    pairs = [rows for rows in by_ticket.values() if len(rows) == len(CANDIDATES)]
    assert len(pairs) >= len(demo_run.tickets) // 2, len(pairs)
    reused = [rows for rows in pairs if any(r["cached_tokens"] == r["prompt_tokens"] for r in rows)]
    assert len(reused) >= len(pairs) - 2, (len(reused), len(pairs))  # a pair may straddle an eviction
    for rows in pairs:
        assert {r["normalization"] for r in rows} == set(CANDIDATES.values())
        assert np.allclose(rows[0]["logits"], rows[1]["logits"], rtol=0, atol=1e-6)
    assert all(rows[0]["logits"] == rows[1]["logits"] for rows in reused)


@pytest.mark.slow
def test_marts_match_the_records(demo_run: trial.Result) -> None:
    """Funnel counts and agreement per candidate and week, recomputed from the records."""
    root = Path(demo_run.records_root)
    proposals = records(root, "proposals")
    final = latest_outcomes(records(root, "outcomes"))
    for week in demo_run.weeks:
        funnel = {r["candidate"]: r for r in summary.mart(demo_run.marts, "funnel", week)}
        keys = {r["candidate"]: r["model_key"] for r in summary.mart(demo_run.marts, "identities", week)}
        agreement = {r["model_key"]: r for r in summary.mart(demo_run.marts, "agreement", week)}
        for candidate in CANDIDATES:
            rows = [p for p in proposals if p["candidate"] == candidate and week_of(p["received_at"]) == week]
            scored = [p for p in rows if p["status"] == "scored"]
            assert funnel[candidate]["offered"] == len(rows)
            assert funnel[candidate]["scored"] == len(scored)
            labelled = [p for p in scored if p["decision_id"] in final]
            if not labelled:
                continue
            row = agreement[keys[candidate]]
            assert row["labelled"] == len(labelled)
            correct = sum(p["proposal"] == final[p["decision_id"]] for p in labelled)
            assert row["agreement"] == pytest.approx(correct / len(labelled))
            outside = sum(final[p["decision_id"]] in OUT_OF_SCOPE_ACTIONS for p in labelled)
            assert row["outside_options"] == outside


@pytest.mark.slow
def test_the_simulated_auditor_answers_the_last_weeks_sample_and_the_review_shows_correctness(
        demo_run: trial.Result) -> None:
    """The last week's sample is answered with the tickets' truth; the review shows it beside agreement.

    Every sampled ticket has an audit (two for double audits); production's audited correctness is the
    share of audited tickets where its final outcome is the truth (the auditor errs on a few answers).
    """
    week = demo_run.weeks[-1]
    root = Path(demo_run.records_root)
    sample = ds.dataset(root / "audit_samples", format="parquet").to_table().to_pylist()
    audits = [o for o in records(root, "outcomes") if o["source"] == SOURCE_AUDIT]
    assert {r["week"] for r in sample} == {week}
    assert len(audits) == sum(2 if r["double_audit"] else 1 for r in sample) > 0
    assert {a["decision_id"] for a in audits} == {r["decision_id"] for r in sample}
    rows = {r["model_key"]: r for r in summary.mart(demo_run.marts, "correctness", week)}
    assert rows["production"]["audited"] > 0
    assert 0 <= rows["production"]["correctness_low"] <= rows["production"]["correctness"] <= 1
    html = demo_run.report.read_text(encoding="utf-8")
    assert "Who was right: audited correctness beside agreement with production" in html


@pytest.mark.slow
def test_report_and_table_match_the_marts(demo_run: trial.Result) -> None:
    """The review names each candidate's identity and labelled count; the table's numbers are the marts'.

    Each candidate has a verdict in the review's summary.
    """
    week = demo_run.weeks[-1]
    html = demo_run.report.read_text(encoding="utf-8")
    md = demo_run.summary.read_text(encoding="utf-8")
    assert week in html
    lines = summary.lines(demo_run.marts, week, md, demo_run.p95_ms)
    agreement = {r["model_key"]: r for r in summary.mart(demo_run.marts, "agreement", week)}
    funnel = {r["candidate"]: r for r in summary.mart(demo_run.marts, "funnel", week)}
    for line in lines:
        assert line.model_key in html
        assert line.verdict in {"go", "wait", "reject"}
        assert f"{agreement[line.model_key]['labelled']} labelled" in html
        assert line.scored == funnel[line.candidate]["scored"]
        assert line.agreement == agreement[line.model_key]["agreement"]
        assert line.p95_ms is not None
        assert line.p95_ms > 0
    table = summary.table(lines)
    assert all(line.candidate in table and line.verdict in table for line in lines)
    assert demo_run.policy["chosen_on"] == demo_run.weeks[-2]
    assert demo_run.policy["week"] == week
    assert demo_run.policy["candidate"] == "pmi"
    assert "Out of sample" in summary.policy_line(demo_run.policy)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"


def _group_members(pgids: set[int]) -> list[int]:
    """Live processes whose process group is one of ``pgids`` (e.g. the sidecar's relay)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) in pgids:
            found.append(int(stat.parent.name))
    return found


def test_ctrl_c_stops_every_service_and_frees_its_ports(tmp_path: Path) -> None:
    """SIGINT while the first week runs: exit 130, every child (and its group) gone, every port free."""
    proc = subprocess.Popen([sys.executable, "-m", "semif_shadow", "demo", "--tickets", "400", "--weeks", "2",  # noqa: S603
                             "--out", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    listing = tmp_path / "logs" / "processes.json"
    deadline = time.monotonic() + 300
    started: list[dict[str, Any]] = []
    while not any(c["name"].startswith("sidecar") for c in started):
        assert time.monotonic() < deadline, "no sidecar started"
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        time.sleep(0.2)
        started = json.loads(listing.read_text()) if listing.is_file() else []
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err.decode()[-2000:]
    assert {c["name"] for c in started} >= {"scorer", "router"}
    pids = {int(c["pid"]) for c in started}
    assert not [p for p in pids if _alive(p)]
    assert not _group_members(pids)
    for port in (p for c in started for p in c["ports"]):
        with socket.socket() as s:  # as a restarted server would: TIME_WAIT is no obstacle, a listener is
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen()


def test_marts_helper_reads_a_missing_week_as_empty(tmp_path: Path) -> None:
    """`summary.mart` reads one week's rows of the demo's type, and nothing where the week is absent."""
    folder = tmp_path / "funnel" / "week=2026-W47"
    folder.mkdir(parents=True)
    import pyarrow as pa  # noqa: PLC0415

    pq.write_table(pa.table({"decision_type": ["ticket_routing", "other"], "scored": [3, 4]}),
                   folder / "part-0.parquet")
    assert summary.mart(tmp_path, "funnel", "2026-W47") == [{"decision_type": "ticket_routing", "scored": 3}]
    assert summary.mart(tmp_path, "funnel", "2026-W48") == []

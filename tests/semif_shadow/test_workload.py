"""The demo's tickets and its production router's rules (no model: fast)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from semif_shadow.demo import clinc, trial
from semif_shadow.demo.cli import demo
from semif_shadow.demo.router import init_app
from semif_shadow.demo.rules import REVIEW, SUPPORT_RULES, route
from semif_shadow.demo.workload import OUT_OF_SCOPE_ACTIONS, TEAMS, synthetic
from tests.harness import CLINC150

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient


def test_the_workload_is_deterministic_and_varied() -> None:
    """Same seed, same tickets; every kind appears; the last week carries the shifted (shipping) mix."""
    tickets = synthetic(600, 3, seed=5)
    assert tickets == synthetic(600, 3, seed=5)
    assert tickets != synthetic(600, 3, seed=6)
    kinds = {"clear", "misleading", "ambiguous", "vague", "out_of_scope"}
    assert set(Counter(t.kind for t in tickets)) == kinds
    assert {t.week for t in tickets} == {0, 1, 2}
    assert len({t.body for t in tickets}) > 300
    share = [sum(t.truth == "shipping" for t in tickets if t.week == w) / 200 for w in range(3)]
    assert share[2] > share[0] + 0.1
    assert all(t.truth in TEAMS or t.truth in OUT_OF_SCOPE_ACTIONS for t in tickets)


def test_the_router_routes_clear_tickets_mostly_right_and_reviews_the_rest() -> None:
    """Clear tickets go to their team (mostly), some ambiguous ones to review, out of scope to its action."""
    tickets = synthetic(600, 2, seed=1)
    routed = {t.ticket_id: route(SUPPORT_RULES, f"{t.subject} {t.body}")[0] for t in tickets}
    clear = [t for t in tickets if t.kind == "clear"]
    assert sum(routed[t.ticket_id] == t.truth for t in clear) / len(clear) > 0.8
    assert all(routed[t.ticket_id] == t.truth for t in tickets if t.kind == "out_of_scope")
    assert any(routed[t.ticket_id] == REVIEW for t in tickets if t.kind == "ambiguous")
    misleading = [t for t in tickets if t.kind == "misleading"]
    assert sum(routed[t.ticket_id] != t.truth for t in misleading) > len(misleading) / 2


@pytest.mark.parametrize(("text", "team"), [
    ("I was charged twice, please refund", "billing"),
    ("hello", REVIEW),
    ("refund the parcel", REVIEW),
    ("We want a quote for 500 seats", "forward_to_sales"),
])
def test_route_rules(text: str, team: str) -> None:
    """Most keyword hits win; none or a tie is review; an out-of-scope phrase is its action."""
    assert route(SUPPORT_RULES, text)[0] == team


async def test_the_router_service_answers_and_refuses_bad_bodies(aiohttp_client: type[TestClient]) -> None:
    """POST /route answers the team; a body without a ticket is a 400 naming the field."""
    client = await aiohttp_client(init_app(SUPPORT_RULES))  # type: ignore[operator]
    ticket = {"subject": "", "body": "refund me"}
    resp = await client.post("/route", json={"ticket_id": "T-1", "ticket": ticket})
    assert resp.status == 200
    assert (await resp.json())["team"] == "billing"
    resp = await client.post("/route", json={"ticket_id": "T-1"})
    assert resp.status == 400
    assert (await resp.json())["error"]["field"] == "ticket.body"
    resp = await client.post("/route", data=b"{")
    assert (await resp.json())["error"]["field"] == "body"


@pytest.mark.skipif(not (CLINC150 / "data_full.json").is_file(), reason="CLINC150 absent: set CLINC150_DIR")
def test_clinc150_tickets_are_real_queries_with_domains() -> None:
    """The CLINC150 workload: test-split queries, their domain as truth, out-of-scope ones declined."""
    tickets = clinc.clinc150(CLINC150, 300, 3, seed=2)
    assert len(tickets) == 300
    assert {t.truth for t in tickets} <= {*clinc.DOMAINS, clinc.DECLINE}
    assert any(t.truth == clinc.DECLINE for t in tickets)
    routed = [route(clinc.CLINC_RULES, t.body)[0] for t in tickets if t.truth != clinc.DECLINE]
    assert sum(r != REVIEW for r in routed) > len(routed) / 3


def test_scorer_threads_reach_the_demo_scorer_and_bad_values_are_refused(tmp_path: Path) -> None:
    """``--scorer-threads`` sets the scorer's ``SCORER_N_THREADS`` (default: one core fewer); 0 is refused."""
    asked = trial.scorer_env(trial.DemoConfig(out=tmp_path, scorer_threads=2), 8123)
    assert asked["SCORER_N_THREADS"] == "2"
    assert asked["SCORER_PORT"] == "8123"
    default = trial.scorer_env(trial.DemoConfig(out=tmp_path), 8123)
    assert default["SCORER_N_THREADS"] == str(trial.scorer_threads())
    assert default["SCORER_LOGIT_MEMO"] == str(trial.LOGIT_MEMO)  # both candidates share one decode
    refused = CliRunner().invoke(demo, ["--scorer-threads", "0", "--out", str(tmp_path)])
    assert refused.exit_code == 2
    assert "--scorer-threads" in refused.output

"""Blind: nothing the page receives depends on, or shows, production's outcome or any proposal.

Two record sets hold the same decisions (same ids, same stored states) with different production
outcomes, proposals and probabilities. An auditor opens the same sampled decision in each, in headless
Chromium, and answers it: every response the page receives (documents, redirects, script, style)
is kept. The two sequences are identical but for the random session and CSRF tokens, so no byte of
them depends on production or the candidates; and no probability and no word naming them appears.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from tests.audit import week
from tests.audit.chromium import Seen, tab
from tests.audit.serving import running
from tests.dashboards.browser import chromium

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(chromium() is None, reason="chromium not installed")
N = 8
TOKENS = re.compile(r'(name="csrf" value=")[A-Za-z0-9_-]+(")')
MOVING_HEADERS = {"date", "set-cookie", "last-modified", "etag", "content-length"}
"""Headers that differ between any two runs (time, random tokens, file times, token lengths)."""
WORDS = ("proposal", "probabilit", "production", "outcome", "candidate", "challenger", "logit")


def world(tmp: Path, outcome_seed: int) -> tuple[Path, Path, list[week.Decision]]:
    """The same decisions and states, with outcomes and proposals drawn from ``outcome_seed``."""
    tmp.mkdir(parents=True, exist_ok=True)
    items = week.decisions(N, seed=3)
    for item, other in zip(items, week.decisions(N, seed=outcome_seed), strict=True):
        item.outcome, item.proposals = other.outcome, other.proposals
    return tmp / "records", week.catalog(tmp / "catalog.yaml"), items


async def seen_by_auditor(tmp: Path, outcome_seed: int,
                          decision_id: str) -> tuple[list[Seen], list[week.Decision]]:
    """Every response the page receives: sign in, open ``decision_id``, answer it, land on the next."""
    root, catalog, items = world(tmp, outcome_seed)
    await week.write_records(root, tmp / "sidecar-spool", items)
    week.write_sample(root, [d.decision_id for d in items])
    with running(root, catalog, tmp / "audit-spool") as base, tab() as page:
        page.sign_in(base, week.TOKEN, "blind-1")
        page.goto(f"{base}/decisions/{decision_id}")
        assert page.text("decision-id") == decision_id
        page.press("2")
        return page.seen, items


def normalized(seen: list[Seen]) -> list[tuple[str, int, tuple[tuple[str, str], ...], str]]:
    """The responses without what differs between any two runs (tokens, dates, the port), sorted.

    Sorted: the script and the style sheet load side by side, in either order.
    """
    port = re.compile(r"127\.0\.0\.1:\d+")
    return sorted((port.sub("HOST", s.url), s.status,
                   tuple(sorted((k.lower(), v) for k, v in s.headers.items()
                                if k.lower() not in MOVING_HEADERS)),
                   TOKENS.sub(r"\1T\2", s.body))
                  for s in seen if not s.url.endswith("/favicon.ico"))  # asked for when the browser likes


async def test_no_response_depends_on_or_shows_production_or_the_candidates(tmp_path: Path) -> None:
    """The responses for a sampled decision are the same whatever production and the candidates did.

    And they hold no probability and no word naming an outcome, a proposal or a candidate.
    """
    target = "d0003"
    seen_a, items_a = await seen_by_auditor(tmp_path / "a", 11, target)
    seen_b, items_b = await seen_by_auditor(tmp_path / "b", 12, target)
    a_item = next(i for i in items_a if i.decision_id == target)
    b_item = next(i for i in items_b if i.decision_id == target)
    assert a_item.outcome != b_item.outcome or a_item.proposals != b_item.proposals  # the worlds differ
    assert {s.url.rsplit("/", 1)[-1].split("?")[0] for s in seen_a} >= {"sign-in", "next", target,
                                                                         "workbench.js", "workbench.css"}
    assert [n[:2] for n in normalized(seen_a)] == [n[:2] for n in normalized(seen_b)]
    assert normalized(seen_a) == normalized(seen_b)
    for s in seen_a + seen_b:
        text = (s.body + " ".join(f"{k}: {v}" for k, v in s.headers.items())).lower()
        for word in WORDS:
            assert word not in text, (s.url, word)
        for item in items_a + items_b:
            for _, probabilities in item.proposals.values():
                for p in probabilities:
                    assert repr(p) not in text, (s.url, p)
                    assert f"{p:.4f}" not in text, (s.url, p)

"""Plain helpers of the scorer tests (data, runs, servers), imported where used.

`conftest.py` beside it keeps the fixtures.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from contracts.semif import ScoreRequest, parse_request
from scorer.engine import Engine
from scorer.settings import ScorerSettings

if TYPE_CHECKING:
    from aiohttp.test_utils import TestClient


def make_engine(model_path: Path, **overrides: object) -> Engine:
    """An engine over the real model with test-sized settings."""
    values: dict[str, object] = {"model_path": model_path, "n_threads": 2, "n_ctx": 2048, **overrides}
    return Engine.from_settings(ScorerSettings.model_validate(values))


QUESTION = "Which team should handle this support ticket?"


STATE = "I was charged twice for my subscription this month and I want a refund for one of the payments."


def _score(engine: Engine, request: ScoreRequest) -> dict[str, Any]:
    """The engine's response as its JSON body (what the server sends)."""
    return engine.score(request).to_json()


CASES: dict[str, list[Any]] = {
    "single_token": ["yes", "no", "maybe"],
    "multi_token": [
        {"id": "billing", "text": "Billing and refunds team"},
        {"id": "tech", "text": "Technical support for the mobile app"},
        {"id": "ship", "text": "Shipping"},
    ],
    "shared_first_token": [
        {"id": "a", "text": "Technical billing"},
        {"id": "b", "text": "Technical support"},
        {"id": "c", "text": "Technical writing"},
    ],
    "prefix_of_another": [
        {"id": "short", "text": "Billing"},
        {"id": "long", "text": "Billing dispute escalation"},
        {"id": "other", "text": "Account security"},
    ],
    "non_ascii": [
        {"id": "es", "text": "Facturación y reembolsos"},
        {"id": "ja", "text": "技術サポート"},
        {"id": "emoji", "text": "Livraison 📦 à domicile"},
    ],
}


def _request(options: list[Any], state: Any = STATE, **scoring: Any) -> Any:
    return parse_request(
        {
            "decision_id": "d-1",
            "decision_type": "t",
            "state": state,
            "question": QUESTION,
            "options": options,
            "scoring": scoring,
        }
    )


DECISION: dict[str, Any] = {
    "decision_id": "d-1",
    "decision_type": "support",
    "state": "I was charged twice this month.",
    "question": "Which team should handle this ticket?",
    "options": [{"id": "billing", "text": "Billing"}, {"id": "tech", "text": "Technical support"}],
}


def settings_for(model_path: Path, **overrides: Any) -> ScorerSettings:
    """Server settings over the real model, sized for tests."""
    return ScorerSettings.model_validate(
        {"model_path": model_path, "n_threads": 2, "n_ctx": 1024, **overrides}
    )


async def ready(client: TestClient) -> None:
    """Wait until /ping answers 200 (the model loads in the background)."""
    for _ in range(600):
        if (await client.get("/ping")).status == 200:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("server never became ready")


PROCESS_DECISION: dict[str, Any] = {
    "decision_id": "p-1",
    "state": "I was charged twice this month.",
    "question": "Which team should handle this ticket?",
    "options": ["Billing", "Technical support"],
}


def start_server(model_path: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`semif-shadow serve` in a child process, logging to ``log``."""
    environ = {
        **os.environ,
        "SCORER_MODEL_PATH": str(model_path),
        "SCORER_N_CTX": "1024",
        "SCORER_N_THREADS": "2",
        "SCORER_SHUTDOWN_GRACE_S": "20",
    }
    with log.open("wb") as out:
        return subprocess.Popen(  # noqa: S603  (our own console script, fixed arguments)
            [str(Path(sys.executable).with_name("semif-shadow")), "serve", "--port", str(port)],
            cwd=ROOT,
            env=environ,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def ping_status(session: aiohttp.ClientSession, url: str) -> int | None:
    """/ping's status, or None while nothing listens."""
    try:
        async with session.get(f"{url}/ping") as response:
            return response.status
    except aiohttp.ClientConnectionError:
        return None


ROOT = Path(__file__).resolve().parents[2]


TICKETS = [  # support tickets the batching tests score alone and together
    "I was charged twice for my subscription this month, please refund.",
    "The app crashes whenever I open settings on Android 14.",
    "How do I change the email address on my account?",
    "My package never arrived and tracking shows nothing since Monday.",
    "Can I get an invoice with my company VAT number?",
    "The password reset email never comes through.",
    "I want to cancel my plan and delete all my data.",
    "Is there a discount for annual billing for nonprofits? We are a small charity.",
]
ROUTE = [  # single- and multi-token options, two sharing their first token
    ("billing", "Billing"),
    ("tech", "Technical problem with the app"),
    ("account", "Account settings"),
    ("deletion", "Account deletion and privacy"),
    ("shipping", "Shipping and delivery"),
]

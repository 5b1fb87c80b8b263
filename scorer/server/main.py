"""`semif-shadow serve` (and, through the entry layer, the bare `serve` that SageMaker runs).

SIGTERM (SageMaker gives 30 s) goes through aiohttp's graceful exit: the listener closes, `/ping`
and new requests answer 503, queued requests finish within `SCORER_SHUTDOWN_GRACE_S` (default 25 s)
or fail with 503 `not_ready`, the model is freed, and the process exits 0.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import click

from contracts.settings import build_settings
from scorer.settings import ScorerSettings

if TYPE_CHECKING:
    from collections.abc import Callable

    from scorer.engine import Engine


def run(settings: ScorerSettings) -> None:
    """Serve until SIGTERM/SIGINT (logging is set up by the entry layer; the server logs at INFO)."""
    from aiohttp import web  # noqa: PLC0415  (keep `--help` fast)

    from scorer.devices import refuse_invariance_on_gpu  # noqa: PLC0415
    from scorer.server.app import init_app  # noqa: PLC0415

    refuse_invariance_on_gpu(settings)  # before the model loads and the port is bound
    logging.getLogger("scorer").setLevel(logging.INFO)
    app = init_app(settings) if settings.release_record is None else init_app(settings, _released(settings))
    web.run_app(
        app,
        host=settings.host,
        port=settings.port,
        access_log=None,
        shutdown_timeout=settings.shutdown_grace_s + 1,
        print=None,
        handle_signals=True,
        handler_cancellation=True,  # a client that hangs up cancels its handler: its queued job is skipped
    )


def _released(settings: ScorerSettings) -> Callable[[ScorerSettings], Engine]:
    """Load the model now and check it against the release record; refuse to start on any difference.

    With a record the model loads before the port is bound (nothing answers `/ping` until it matches),
    and a mismatch is a ``SettingsError``: one line naming every differing field, exit code 2.
    """
    from scorer import release  # noqa: PLC0415
    from scorer.engine import Engine  # noqa: PLC0415

    assert settings.release_record is not None
    record = release.load(settings.release_record, settings.release_record_sha256)
    engine = Engine.from_settings(settings)
    try:
        release.enforce(record, engine, settings.release_record)
    except BaseException:
        engine.close()
        raise
    logging.getLogger("scorer").info("release record %s matches: identity %s", settings.release_record,
                                     record["model_identity_sha256"][:12])
    return lambda _settings: engine


@click.command("serve")
@click.option("--host", default=None, help="Listen address (default SCORER_HOST, else 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Listen port (default SCORER_PORT, else 8080).")
@click.option(
    "--cross-batch/--no-cross-batch",
    default=None,
    help="Score waiting decisions of one type together (opt-in; see docs/deploy-sagemaker.md).",
)
def serve(host: str | None, port: int | None, cross_batch: bool | None) -> None:
    """Run the SemIf scorer as a SageMaker-compatible HTTP server.

    GET /ping, POST /invocations (SemIf or chat), GET /metrics,
    POST /endpoints/{name}/invocations (sagemaker-runtime emulation).

    \b
    Examples:
      semif-shadow serve
      SCORER_QUEUE_SIZE=64 semif-shadow serve --host 0.0.0.0 --port 8080
      curl -s localhost:8080/invocations -H 'Content-Type: application/json' \\
        -d '{"decision_id":"d1","state":"refund please","question":"Team?","options":["billing","tech"]}'
    """
    flags = {"host": ("--host", host), "port": ("--port", port),
             "cross_batch": ("--cross-batch", cross_batch)}
    run(build_settings(ScorerSettings, flags))

"""Process entry points: `semif-shadow serve` and the bare `serve` that SageMaker runs.

SIGTERM (SageMaker gives 30 s) goes through aiohttp's graceful exit: the listener closes, `/ping`
and new requests answer 503, queued requests finish within `SCORER_SHUTDOWN_GRACE_S` (default 25 s)
or fail with 503 `not_ready`, the model is freed, and the process exits 0.
"""

from __future__ import annotations

import json
import logging
import sys
import time

import click

from scorer.settings import ScorerSettings


class JsonLogFormatter(logging.Formatter):
    """One JSON object per log line."""

    def format(self, record: logging.LogRecord) -> str:
        """Render a record as JSON."""
        line = {
            "ts": round(time.time(), 3),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line)


def run(settings: ScorerSettings) -> None:
    """Serve until SIGTERM/SIGINT."""
    from aiohttp import web  # noqa: PLC0415  (keep `--help` fast)

    from scorer.server.app import init_app  # noqa: PLC0415

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLogFormatter())
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    web.run_app(
        init_app(settings),
        host=settings.host,
        port=settings.port,
        access_log=None,
        shutdown_timeout=settings.shutdown_grace_s + 1,
        print=None,
        handle_signals=True,
    )


def main() -> None:
    """The bare `serve` command (SageMaker runs ``serve``); settings come from SCORER_* variables."""
    run(ScorerSettings())


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
    overrides = {
        k: v for k, v in {"host": host, "port": port, "cross_batch": cross_batch}.items() if v is not None
    }
    settings = ScorerSettings()
    run(settings.model_copy(update=overrides) if overrides else settings)

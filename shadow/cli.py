"""`semif-shadow sidecar`: run the sidecar, or validate a decision catalog."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import click

log = logging.getLogger("shadow.sidecar")

if TYPE_CHECKING:
    from shadow.settings import ShadowSettings


@click.group("sidecar")
def sidecar() -> None:
    """The shadow sidecar: mirror API or transparent proxy beside a production service.

    \b
    Examples:
      semif-shadow sidecar check-catalog catalog.yaml
      SHADOW_CATALOG=catalog.yaml semif-shadow sidecar run
      semif-shadow sidecar run --catalog catalog.yaml --proxy-port 8471 --upstream http://127.0.0.1:8000
    """


@sidecar.command("check-catalog")
@click.argument("catalog", type=click.Path(path_type=Path, dir_okay=False))
def check_catalog(catalog: Path) -> None:
    """Validate a decision catalog and list its decision types.

    \b
    Example:
      semif-shadow sidecar check-catalog shadow/examples/catalog.yaml
    """
    from contracts.catalog import load_catalog  # noqa: PLC0415

    parsed = load_catalog(catalog)  # a CatalogError is one line (the entry layer)
    for name, dtype in parsed.decision_types.items():
        mode = f"proxy {dtype.proxy.method} {dtype.proxy.path}" if dtype.proxy else "api"
        challengers = "".join(f", challenger {c} {s.backend} {s.endpoint}"
                              for c, s in dtype.candidates.items())
        click.echo(f"{name}: {len(dtype.options)} options, rate {dtype.sampling.rate:g}, "
                   f"{dtype.scorer.backend} {dtype.scorer.endpoint}{challengers}, {mode}, "
                   f"ends {dtype.experiment_ends_at.isoformat()}")
    click.echo(f"ok: {len(parsed.decision_types)} decision types, config_sha256 {parsed.sha256()[:12]}")


@sidecar.command("run")
@click.option("--catalog", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Decision catalog YAML (default: SHADOW_CATALOG).")
@click.option("--port", type=int, default=None, help="Mirror API port (default: SHADOW_PORT, 8470).")
@click.option("--proxy-port", type=int, default=None, help="Proxy mode: listen here (SHADOW_PROXY_PORT).")
@click.option("--upstream", default=None, help="Proxy mode: production base URL (SHADOW_UPSTREAM_URL).")
def run(catalog: Path | None, port: int | None, proxy_port: int | None, upstream: str | None) -> None:
    """Run the sidecar until SIGINT/SIGTERM. Every setting is also a SHADOW_* variable.

    \b
    Example:
      SHADOW_RECORDS_ROOT=/var/lib/shadow semif-shadow sidecar run \\
          --catalog catalog.yaml --proxy-port 8471 --upstream http://127.0.0.1:8000
    """
    from contracts.settings import build_settings  # noqa: PLC0415
    from shadow.errors import ShadowError  # noqa: PLC0415
    from shadow.settings import ShadowSettings  # noqa: PLC0415

    flags = {"catalog": ("--catalog", catalog), "port": ("--port", port),
             "proxy_port": ("--proxy-port", proxy_port), "upstream_url": ("--upstream", upstream)}
    settings = build_settings(ShadowSettings, flags)
    logging.getLogger("shadow").setLevel(logging.INFO)
    try:
        _run_loop(serve(settings))
    except ShadowError as exc:
        raise click.ClickException(str(exc)) from exc


def _run_loop(main: object) -> None:
    try:
        import uvloop  # noqa: PLC0415  (optional: faster loop)
    except ImportError:  # only uvloop's own absence: an import error from `main` must reach the CLI
        asyncio.run(main)  # type: ignore[arg-type]
        return
    uvloop.run(main)  # type: ignore[arg-type]


async def serve(settings: ShadowSettings) -> None:
    """Start the API (and the proxy), then wait for a signal and shut down in reverse order."""
    from aiohttp import web  # noqa: PLC0415

    from shadow.app import init_app  # noqa: PLC0415
    from shadow.intake.supervisor import running_proxy, running_proxy_process  # noqa: PLC0415
    from shadow.keys import MIRROR  # noqa: PLC0415
    from shadow.proxy.relay import Upstream  # noqa: PLC0415

    if settings.proxy_port is not None:
        Upstream.parse(settings.upstream_url)  # refuse a bad URL before anything starts
    core = init_app(settings)
    runner = web.AppRunner(core, access_log=None, shutdown_timeout=settings.shutdown_grace_s)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await runner.setup()
    try:
        await web.TCPSite(runner, settings.host, settings.port).start()
        log.info("listening", extra={"fields": {"event": "listening", "url": f"http://{settings.host}:{settings.port}"}})
        async with contextlib.AsyncExitStack() as stack:
            if settings.proxy_port is not None:
                proxy = running_proxy_process if settings.proxy_process else running_proxy
                url = await stack.enter_async_context(proxy(settings, core))
                log.info("proxying", extra={"fields": {"event": "proxying", "url": url,
                                                       "upstream": settings.upstream_url}})
            await stop.wait()
            # The mirror's grace (calls in flight) runs beside the relay's (requests in flight), not after.
            core[MIRROR].begin_stop(settings.shutdown_grace_s)
    finally:
        with contextlib.suppress(Exception):
            await runner.cleanup()  # stops the mirror (or waits for `stopping`), drains, closes the store

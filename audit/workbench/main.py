"""Run the workbench until SIGINT/SIGTERM: the one place that reads the environment and opens the port."""

from __future__ import annotations

import asyncio
import os
import signal
import ssl
import sys
from typing import TYPE_CHECKING

from aiohttp import web

from audit.errors import SetupError
from audit.workbench.app import init_app

if TYPE_CHECKING:
    from audit.workbench.settings import WorkbenchSettings


def _tls(settings: WorkbenchSettings) -> ssl.SSLContext | None:
    if settings.tls_cert is None:
        return None
    if settings.tls_key is None:
        raise SetupError("--tls-cert (AUDIT_TLS_CERT) needs --tls-key (AUDIT_TLS_KEY)")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(settings.tls_cert, settings.tls_key)
    return context


async def serve(settings: WorkbenchSettings) -> None:
    """Start, print the URL (one line on stdout), wait for a signal, then close the record store."""
    app = init_app(settings, os.environ)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=5.0)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await runner.setup()
    try:
        context = _tls(settings)
        site = web.TCPSite(runner, settings.host, settings.port, ssl_context=context)
        await site.start()
        port = runner.addresses[0][1]
        scheme = "https" if context else "http"
        sys.stdout.write(f"audit workbench for {settings.week}: {scheme}://{settings.host}:{port}/\n")
        sys.stdout.flush()
        await stop.wait()
    finally:
        await runner.cleanup()  # closes the record store: the journal is published to Parquet

"""The workbench application: `init_app()`; the record store and the worklist live in one cleanup context.

Plain HTTP off loopback is refused before anything opens (``guards.check_exposure``).

The context opens, in order:

- the sessions: the sample's decision types and their sign-in tokens, and the sign-in limits. A type
  the catalog lacks, or without a token, is not served (one line on stderr names it and why); with no
  type left, no start;
- the sidecar's durable record store, on the workbench's own spool. It starts before anything reads
  the audits: its recovery publishes what a killed workbench left in the journal, so the audits read
  next include every acknowledged answer;
- the worklist: the week's sample, the decisions' stored states, the audits already in the records.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

from aiohttp import web

from audit.errors import SetupError
from audit.workbench import reading
from audit.workbench.answers import AnswerWriter
from audit.workbench.guards import check_exposure
from audit.workbench.keys import CATALOG, SESSIONS, SETTINGS, STATES, WORKLIST, WRITER
from audit.workbench.limits import SignInLimits
from audit.workbench.middlewares import error_middleware, security_headers
from audit.workbench.routes import setup_routes
from audit.workbench.sessions import Sessions
from audit.workbench.worklist import Worklist
from contracts.catalog import load_catalog
from contracts.errors import CatalogError
from shadow.records.store import RecordStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping

    from audit.workbench.settings import WorkbenchSettings
    from contracts.catalog import Catalog


def init_app(settings: WorkbenchSettings, environ: Mapping[str, str]) -> web.Application:
    """The workbench; ``environ`` holds the decision types' sign-in tokens (the catalog names them)."""
    check_exposure(settings)
    try:
        catalog = load_catalog(settings.catalog)
    except CatalogError as exc:
        raise SetupError(str(exc).splitlines()[0]) from exc
    app = web.Application(middlewares=[error_middleware(settings)], client_max_size=settings.max_body_bytes)
    app[SETTINGS] = settings
    app[CATALOG] = catalog
    app.on_response_prepare.append(security_headers)
    app.cleanup_ctx.append(_records_ctx(environ))
    setup_routes(app)
    return app


def tokens(catalog: Catalog, types: set[str], environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Each servable type's sign-in token, and why each other type cannot be served (fails closed).

    A type the catalog lacks, or whose token variable is unset, is left out; `SetupError` if none is left.
    """
    found, refused = {}, []
    for name in sorted(types):
        dtype = catalog.decision_types.get(name)
        if dtype is None:
            refused.append(f"decision type {name!r} of the sample is not in the catalog")
        elif not dtype.auth_token_env or not environ.get(dtype.auth_token_env):
            variable = dtype.auth_token_env or "auth_token_env (unset in the catalog)"
            refused.append(f"decision type {name!r} needs a sign-in token: set {variable}")
        else:
            found[name] = environ[dtype.auth_token_env]
    if not found:
        raise SetupError("; ".join(refused))
    return found, refused


def _records_ctx(environ: Mapping[str, str]) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        settings = app[SETTINGS]
        records = settings.records()
        sample = reading.read_sample(records, settings.week, settings.decision_type)
        limits = SignInLimits(settings.sign_in_client_failures, settings.sign_in_type_failures,
                              settings.sign_in_window_s)
        served, refused = tokens(app[CATALOG], {r.decision_type for r in sample}, environ)
        for reason in refused:
            sys.stderr.write(f"audit workbench: not serving {reason}\n")
        sample = [r for r in sample if r.decision_type in served]
        app[SESSIONS] = Sessions(served, limits)
        async with RecordStore(records) as store:
            loop = asyncio.get_running_loop()
            worklist = Worklist(sample, settings.claim_s)
            audits = await loop.run_in_executor(None, reading.read_audits, records,
                                                {r.sample_id for r in sample})
            worklist.load(audits)
            app[STATES] = await loop.run_in_executor(None, reading.read_states, records, settings.week,
                                                     sample)
            app[WORKLIST] = worklist
            app[WRITER] = AnswerWriter(store, settings.spool_dir / "notes" / f"week={settings.week}.jsonl")
            yield
    return ctx

"""The workbench application's typed state keys."""

from __future__ import annotations

from aiohttp import web

from audit.workbench.answers import AnswerWriter
from audit.workbench.sessions import Sessions
from audit.workbench.settings import WorkbenchSettings
from audit.workbench.worklist import Worklist
from contracts.catalog import Catalog

SETTINGS = web.AppKey("settings", WorkbenchSettings)
CATALOG = web.AppKey("catalog", Catalog)
SESSIONS = web.AppKey("sessions", Sessions)
WORKLIST = web.AppKey("worklist", Worklist)
STATES = web.AppKey("states", dict[tuple[str, str], str | None])
WRITER = web.AppKey("writer", AnswerWriter)

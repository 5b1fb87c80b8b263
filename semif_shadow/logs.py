"""JSON-lines logging, set up once by the entry layer.

Every line on stderr is one JSON object: ``ts`` (UTC, ISO 8601 with milliseconds), ``level``,
``logger``, ``message``, the fields a caller passed as ``extra={"fields": {...}}`` and ``exc`` with the
traceback where there is one. Filters that packages put on the root handler (the sidecar's
`shadow.redaction.ScrubFilter`) see each record before it is formatted.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

MAX_MESSAGE_CHARS = 8192
"""A longer message is cut (one bad request must not write megabytes of log)."""


class JsonFormatter(logging.Formatter):
    """One JSON object per log record."""

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as a JSON line."""
        message = record.getMessage()
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS] + "…",
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update({k: v for k, v in fields.items() if k not in line})
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:  # already rendered (and scrubbed) by a filter
            line["exc"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(level: int = logging.INFO) -> logging.Handler:
    """Log JSON lines to stderr at ``level`` (replacing any earlier set-up); return the handler."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    return handler

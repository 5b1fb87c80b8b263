"""JSON-lines logging, set up once by the entry layer.

Every line on stderr is one JSON object: ``ts`` (UTC, ISO 8601 with milliseconds), ``level``,
``logger``, ``message``, the fields a caller passed as ``extra={"fields": {...}}`` and ``exc`` with the
traceback where there is one. Filters that packages put on the root handler (the sidecar's
`shadow.redaction.ScrubFilter`) see each record before it is formatted.

The root handler never blocks its caller: it puts each record on a bounded queue (``QUEUE_RECORDS``)
that one thread writes to stderr. A stderr nobody drains stalls that thread, not the sidecar's event
loop; records that find the queue full are dropped, and the thread says how many in its next line
(``"message": "log records dropped"``, ``dropped``).
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import queue
import sys
import threading
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


QUEUE_RECORDS = 10_000
"""Records waiting for the writer thread; beyond, new ones are dropped (and counted)."""
STOP_WAIT_S = 2.0
"""How long closing the handler waits for the writer thread (a stalled stderr must not hold exit)."""


class QueueingHandler(logging.Handler):
    """Hands each (filtered) record to a writer thread through a bounded queue; never blocks."""

    def __init__(self, target: logging.Handler) -> None:
        super().__init__()
        self.target = target
        self.dropped = 0
        self._queue: queue.Queue[logging.LogRecord | None] = queue.Queue(QUEUE_RECORDS)
        self._thread = threading.Thread(target=self._write, name="log-writer", daemon=True)
        self._thread.start()

    def emit(self, record: logging.LogRecord) -> None:
        """Render the message and traceback now (after the filters), and queue the record."""
        record = copy.copy(record)
        record.msg, record.args = record.getMessage(), None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def _write(self) -> None:
        reported = 0
        while (record := self._queue.get()) is not None:
            self.target.handle(record)
            if self.dropped > reported:
                reported = self.dropped
                note = logging.makeLogRecord({"name": __name__, "levelno": logging.WARNING,
                                              "levelname": "WARNING", "msg": "log records dropped",
                                              "fields": {"dropped": reported}})
                self.target.handle(note)

    def close(self) -> None:
        """Write what is queued, waiting at most ``STOP_WAIT_S``."""
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)
        self._thread.join(STOP_WAIT_S)
        self.target.flush()
        super().close()


def configure(level: int = logging.INFO) -> logging.Handler:
    """Log JSON lines to stderr at ``level`` (replacing any earlier set-up); return the root handler."""
    stream = logging.StreamHandler(sys.stderr)
    stream.setFormatter(JsonFormatter())
    handler = QueueingHandler(stream)
    logging.basicConfig(level=level, handlers=[handler], force=True)
    return handler

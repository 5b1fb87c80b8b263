"""Redaction of decision states before anything is persisted or logged.

``Redactor(remove=[...], hash=[...], key=...)`` takes the catalog's dotted paths into the state
(``customer.email``; a path through a list applies to each element). ``apply`` returns a redacted
copy: removed fields vanish, hashed fields become ``"hmac-sha256:<hex>"`` (HMAC-SHA256 with ``key``
over the value's canonical JSON, so equal values still join). A string state passes through unchanged
(the catalog redacts structured states only; free text must be redacted by its producer).

How redacted values stay out of logs: the sidecar calls ``apply`` first, on the raw state, and only
the result is passed on; nothing in ``shadow.records`` logs a row or a state (log lines carry ids,
counts and paths). ``scrub`` is the safety net for log text that did not follow that rule: it masks
the values of the catalog's field names in ``"name": value`` and ``name=value`` forms, and any raw
string value ``apply`` removed or hashed recently (a bounded set, held per instance, never logged).
``ScrubFilter`` puts every decision type's ``scrub`` on the process's log handlers: the sidecar
installs it on start-up (`install_scrub_filter`) and removes it on shutdown.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import logging
import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

HASH_PREFIX: Final = "hmac-sha256:"
MASK: Final = "[redacted]"
DEFAULT_REMEMBER: Final = 4096
MIN_REMEMBERED_LEN: Final = 4


class Redactor:
    """Removes or keyed-hashes the catalog's fields in a state."""

    def __init__(self, remove: Sequence[str], hash: Sequence[str], key: bytes,  # noqa: A002  (the catalog's word)
                 remember: int = DEFAULT_REMEMBER) -> None:
        if hash and not key:
            raise ValueError("hashing fields needs a non-empty key")
        self._remove = [p.split(".") for p in remove]
        self._hash = [p.split(".") for p in hash]
        self._key = key
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._remember = remember
        names = sorted({p[-1] for p in (*self._remove, *self._hash)}, key=len, reverse=True)
        alternatives = "|".join(re.escape(n) for n in names)
        self._pattern = re.compile(
            rf'("(?:{alternatives})"\s*:\s*)("(?:[^"\\]|\\.)*"|[^,}}\s]+)|\b((?:{alternatives})=)(\S+)'
        ) if names else None

    def digest(self, value: Any) -> str:
        """The keyed hash a hashed field's value becomes."""
        canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        mac = hmac.new(self._key, canonical.encode("utf-8"), hashlib.sha256).hexdigest()
        return f"{HASH_PREFIX}{mac}"

    def apply(self, state: dict[str, Any] | str) -> dict[str, Any] | str:
        """A redacted copy of ``state`` (a string passes through unchanged)."""
        if isinstance(state, str):
            return state
        out = copy.deepcopy(state)
        for path in self._remove:
            self._walk(out, path, remove=True)
        for path in self._hash:
            self._walk(out, path, remove=False)
        return out

    def _walk(self, node: Any, path: list[str], *, remove: bool) -> None:
        if isinstance(node, list):
            for item in node:
                self._walk(item, path, remove=remove)
            return
        if not isinstance(node, dict) or path[0] not in node:
            return
        if len(path) > 1:
            self._walk(node[path[0]], path[1:], remove=remove)
            return
        value = node.pop(path[0]) if remove else node[path[0]]
        self._remember_value(value)
        if not remove:
            node[path[0]] = self.digest(value)

    def _remember_value(self, value: Any) -> None:
        if isinstance(value, (dict, list)):
            for item in value.values() if isinstance(value, dict) else value:
                self._remember_value(item)
            return
        text = str(value)
        if len(text) < MIN_REMEMBERED_LEN or self._remember <= 0:
            return
        self._seen[text] = None
        self._seen.move_to_end(text)
        while len(self._seen) > self._remember:
            self._seen.popitem(last=False)

    def scrub(self, text: str) -> str:
        """``text`` with catalog field values and recently redacted raw values masked."""
        if self._pattern is not None:
            text = self._pattern.sub(_mask_match, text)
        for value in self._seen:
            if value in text:
                text = text.replace(value, MASK)
        return text


def _mask_match(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return f'{match.group(1)}"{MASK}"'
    return f"{match.group(3)}{MASK}"


class ScrubFilter(logging.Filter):
    """A logging filter that renders each record and passes it through every ``Redactor.scrub``."""

    def __init__(self, redactors: Sequence[Redactor]) -> None:
        super().__init__()
        self._redactors = list(redactors)

    def _scrub(self, text: str) -> str:
        for redactor in self._redactors:
            text = redactor.scrub(text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace the record's message, traceback and string fields by scrubbed text (keeps the record)."""
        record.msg = self._scrub(record.getMessage())
        record.args = None
        if record.exc_info:
            record.exc_text = self._scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            record.fields = {k: self._scrub(v) if isinstance(v, str) else v for k, v in fields.items()}
        return True


def install_scrub_filter(redactors: Sequence[Redactor]) -> Callable[[], None]:
    """Put a `ScrubFilter` on every handler of the root logger; return the function that removes it."""
    scrub = ScrubFilter(redactors)
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(scrub)

    def remove() -> None:
        for handler in handlers:
            handler.removeFilter(scrub)

    return remove

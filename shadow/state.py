"""From a mirrored request to the states the sidecar keeps: pick fields, then redact.

Who sees what (``docs/sidecar.md``): the *included* state (fields picked by ``state.include``) exists
only in memory. Every stored row, its ``state_sha256`` and any remote scorer get the *redacted* state
(``state.remove`` deleted, ``state.hash`` replaced by ``hmac-sha256:<hex>`` by `shadow.redaction`). Only
an in-process ``local`` scorer may be given the included state (``state.scorer_sees: included``).
Log lines never carry a state.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shadow.redaction import Redactor

if TYPE_CHECKING:
    from contracts.catalog import StateSpec

State = str | dict[str, Any]
_MISSING = object()


def get_path(value: Any, path: str) -> Any:
    """Read a dotted path (``ticket.customer.id``, list indexes as numbers); '' is the whole value."""
    if not path:
        return value
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise KeyError(path)
    return value


def pick(state: dict[str, Any], include: list[str]) -> dict[str, Any]:
    """Keep only the included dotted paths (missing ones are skipped); empty ``include`` keeps all."""
    if not include:
        return state
    out: dict[str, Any] = {}
    for path in include:
        try:
            value = get_path(state, path)
        except KeyError:
            continue
        node = out
        *parents, leaf = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def canonical(state: State) -> str:
    """The state as stored and hashed: a string as is, an object as sorted compact JSON."""
    if isinstance(state, str):
        return state
    return json.dumps(state, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Prepared:
    """The states of one decision: what the scorer gets, and what a row may keep."""

    for_scorer: State
    redacted: State
    sha256: str
    stored: str | None


class StateRules:
    """One decision type's state rules, with its redactor built once."""

    def __init__(self, spec: StateSpec, key: bytes | None) -> None:
        if spec.hash and not key:
            raise ValueError("state.hash needs SHADOW_REDACTION_KEY")
        self.spec = spec
        self.redactor = Redactor(remove=list(spec.remove), hash=list(spec.hash), key=key or b"")

    def prepare(self, raw: State) -> Prepared:
        """Pick, redact and hash one state."""
        included: State = pick(raw, self.spec.include) if isinstance(raw, dict) else raw
        redacted: State = self.redactor.apply(included) if isinstance(included, dict) else included
        text = canonical(redacted)
        for_scorer = included if self.spec.scorer_sees == "included" else redacted
        return Prepared(for_scorer=for_scorer, redacted=redacted,
                        sha256=hashlib.sha256(text.encode()).hexdigest(),
                        stored=text if self.spec.store else None)

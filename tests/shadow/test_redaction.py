# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Redaction: catalog fields removed or keyed-hashed before anything is persisted or logged."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import logging
from typing import TYPE_CHECKING, Any

import pytest

from shadow.records.settings import RecordSettings
from shadow.records.store import RecordStore
from shadow.redaction import HASH_PREFIX, Redactor, ScrubFilter
from tests.harness import every_byte

from .records.factories import BASE_US, OPTIONS, outcome_row, proposal_row

if TYPE_CHECKING:
    import io
    from pathlib import Path

KEY = b"catalog-secret"
EMAIL = "MARKER-EMAIL-7f3a9c@example.com"
CARD = "MARKER-CARD-4111-91b2"
CONTROL = "CONTROL-MARKER-55d1"


def _state() -> dict[str, Any]:
    return {"customer": {"email": EMAIL, "card": CARD, "tier": "gold"},
            "orders": [{"note": CONTROL, "email": EMAIL}], "text": "charged twice"}


def _redactor() -> Redactor:
    return Redactor(remove=["customer.email", "orders.email"], hash=["customer.card"], key=KEY)


def test_apply_removes_and_hashes_dotted_paths_without_touching_the_input() -> None:
    """Removed fields vanish (through lists too), hashed ones become hmac-sha256:<hex> with the key."""
    state = _state()
    original = copy.deepcopy(state)
    out = _redactor().apply(state)
    assert state == original
    assert isinstance(out, dict)
    expected_mac = hmac.new(KEY, json.dumps(CARD).encode(), hashlib.sha256).hexdigest()
    assert out == {"customer": {"card": f"{HASH_PREFIX}{expected_mac}", "tier": "gold"},
                   "orders": [{"note": CONTROL}], "text": "charged twice"}


def test_hashes_are_keyed_and_stable() -> None:
    """The same value hashes the same under one key (joins still work) and differently under another."""
    first, again = _redactor().apply(_state()), _redactor().apply(_state())
    other = Redactor(remove=[], hash=["customer.card"], key=b"another-key").apply(_state())
    assert isinstance(first, dict)
    assert isinstance(again, dict)
    assert isinstance(other, dict)
    assert first["customer"]["card"] == again["customer"]["card"] != other["customer"]["card"]


def test_strings_and_missing_paths_pass_through() -> None:
    """A free-text state is returned unchanged; a path absent from the state is not an error."""
    redactor = Redactor(remove=["a.b.c"], hash=["x"], key=KEY)
    assert redactor.apply("free text with a.b.c") == "free text with a.b.c"
    assert redactor.apply({"a": {"b": 1}, "y": 2}) == {"a": {"b": 1}, "y": 2}
    with pytest.raises(ValueError, match="key"):
        Redactor(remove=[], hash=["x"], key=b"")


def test_scrub_masks_field_values_and_values_seen_by_apply() -> None:
    """Log text naming a catalog field, or holding a raw value apply redacted, comes out masked."""
    redactor = _redactor()
    redactor.apply(_state())
    text = f'email={EMAIL} {{"card": "{CARD}", "tier": "gold"}} and later {CARD} note={CONTROL}'
    scrubbed = redactor.scrub(text)
    assert EMAIL not in scrubbed
    assert CARD not in scrubbed
    assert CONTROL in scrubbed
    assert '"tier": "gold"' in scrubbed


async def test_a_redacted_marker_reaches_no_file_and_no_log(tmp_path: Path, all_logs: io.StringIO) -> None:
    """A marker in a redacted field is in no byte written (journal, Parquet decoded) and no log line.

    An unredacted control marker is found by the same search, so the search works.
    """
    settings = RecordSettings(root=str(tmp_path / "root"), spool_dir=tmp_path / "spool", writer_id="w1")
    redactor = _redactor()
    state = json.dumps(redactor.apply(_state()), sort_keys=True)
    row = proposal_row("d1", state=state, state_sha256=hashlib.sha256(state.encode()).hexdigest())
    journal_bytes = b""
    async with RecordStore(settings) as store:
        await store.accept("d1", "route", BASE_US, OPTIONS)
        await store.proposal(row)
        await store.outcome(outcome_row("d1"))
        journal_bytes = every_byte(settings.spool_dir)
        logging.getLogger("shadow.records").info("store stats %s", store.snapshot())
    leaky = logging.getLogger("test.leaky")
    scrubbing = logging.StreamHandler(all_logs)
    scrubbing.addFilter(ScrubFilter([redactor]))
    leaky.addHandler(scrubbing)
    leaky.propagate = False
    try:
        leaky.warning("a careless log line: %s", json.dumps(_state()))
    finally:
        leaky.removeHandler(scrubbing)
    written = journal_bytes + every_byte(tmp_path)
    logs = all_logs.getvalue()
    assert CONTROL.encode() in journal_bytes
    assert CONTROL.encode() in written
    for marker in (EMAIL, CARD):
        assert marker.encode() not in written
        assert marker not in logs
    assert "careless" in logs

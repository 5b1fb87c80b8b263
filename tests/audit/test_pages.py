"""The decision page's state: removed fields never shown, hashed ones as hashed, everything as text."""

from __future__ import annotations

import json

from audit.workbench.pages import state_rows
from contracts.catalog import parse_catalog
from tests.audit import week

DTYPE = parse_catalog({"version": 1, "decision_types": {"t": {
    "question": "Q?", "options": [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}],
    "state": {"remove": ["customer.email", "items.secret"], "hash": ["customer.id"], "store": True},
    "scorer": {"backend": "local"}, "experiment_ends_at": "2099-01-01T00:00:00Z"}}}).decision_types["t"]


def test_removed_fields_never_show_and_hashed_ones_show_as_hashed() -> None:
    """A state stored before the catalog removed or hashed a field: the page still never shows its value."""
    stored = json.dumps({"customer": {"email": "x@example.com", "id": "c-42", "plan": "pro"},
                         "items": [{"sku": "s1", "secret": "k1"}, {"sku": "s2", "secret": "k2"}],
                         "note": week.HASHED, "n": 3, "empty": {}})
    rows = state_rows(stored, DTYPE)
    shown = {path: (text, hashed) for path, text, hashed in rows}
    assert "customer.email" not in shown
    assert not any("secret" in path for path in shown)
    assert shown["customer.id"] == ("(hashed field: value not shown)", True)  # listed in hash, stored raw
    assert shown["note"] == (week.HASHED, True)  # an hmac-sha256 value is marked hashed wherever it is
    assert shown["customer.plan"] == ("pro", False)
    assert shown["items[0].sku"] == ("s1", False)
    assert shown["n"] == ("3", False)
    assert shown["empty"] == ("{}", False)
    assert "x@example.com" not in repr(rows)
    assert "c-42" not in repr(rows)


def test_a_string_state_or_none_is_shown_as_stored() -> None:
    """A string state is one row of text; a state that was not stored gives no rows."""
    assert state_rows("free text <b>bold</b>", DTYPE) == [("", "free text <b>bold</b>", False)]
    assert state_rows('"quoted"', DTYPE) == [("", '"quoted"', False)]
    assert state_rows(None, DTYPE) == []

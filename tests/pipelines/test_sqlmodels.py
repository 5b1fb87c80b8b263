"""The SQL models' conventions.

One per file, a CTE ladder ending in `select * from final`, quoted identifiers.
"""

from __future__ import annotations

import pytest

from pipelines.sqlmodels import load_models, quote_ident


def test_every_model_is_a_cte_ladder_ending_in_final() -> None:
    """Each model starts with `with` (after its comment) and ends with `select * from final`."""
    for model in load_models():
        body = "\n".join(line for line in model.sql.splitlines() if not line.startswith("--")).strip()
        assert body.startswith("with "), model.name
        assert body.endswith("select * from final"), model.name


def test_quote_ident_doubles_quotes_and_rejects_unusable_names() -> None:
    """Identifiers are double-quoted with embedded quotes doubled; empty names and NULs are refused."""
    assert quote_ident("funnel") == '"funnel"'
    assert quote_ident('a"b') == '"a""b"'
    for bad in ("", "a\x00b"):
        with pytest.raises(ValueError, match="identifier"):
            quote_ident(bad)

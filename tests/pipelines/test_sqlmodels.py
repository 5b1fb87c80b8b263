"""The SQL models' conventions.

One per file, a CTE ladder ending in `select * from final`, quoted identifiers.
"""

from __future__ import annotations

import re

import pytest

from contracts.records import SOURCE_AUDIT
from pipelines.sqlmodels import PRODUCTION, load_models, quote_ident


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


def _code(sql: str) -> str:
    """The model without its ``--`` comments."""
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


def test_the_sql_literals_of_a_source_and_of_production_are_the_python_constants() -> None:
    """An outcome's source compared in SQL is ``SOURCE_AUDIT``; production's model key is ``PRODUCTION``.

    The models write both as literals: every literal compared with a ``source`` column or a ``model_key``,
    or aliased ``as model_key``, is read here, so a constant changed on one side alone fails.
    """
    code = "\n".join(_code(model.sql) for model in load_models())
    sources = re.findall(r"\bsource\s*(?:=|<>|!=|is distinct from|is not distinct from)\s*'([^']*)'", code)
    keys = re.findall(r"\bmodel_key\s*(?:=|<>|!=)\s*'([^']*)'", code)
    keys += re.findall(r"'([^']*)'\s+as\s+model_key\b", code)
    assert sources
    assert set(sources) == {SOURCE_AUDIT}
    assert set(keys) - {"*"} == {PRODUCTION}

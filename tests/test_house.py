"""The house rules: which package may import which, and how long a module may grow.

The import graph is read from the code with `ast` (imports inside functions count too), so a rule
broken anywhere fails here, not only on the paths a test happens to run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("contracts", "scorer", "shadow", "pipelines", "dashboards", "semif_shadow")
ENTRY = "semif_shadow"

FORBIDDEN = {
    "contracts": {"scorer", "shadow", "pipelines", "dashboards", ENTRY},
    "scorer": {"shadow", "pipelines", "dashboards", ENTRY},
    "shadow": {"pipelines", "dashboards", ENTRY},
    "pipelines": {"shadow", "scorer", "dashboards", ENTRY},
    "dashboards": {"shadow", "scorer", ENTRY},
}
"""Package -> top-level packages it must never import (the entry layer is imported by nothing)."""

RELAY_MODULES = ("framing", "held", "connection", "sides", "relay", "channel", "main")
RELAY_MAY_IMPORT = {f"shadow.proxy.{m}" for m in RELAY_MODULES} | {"shadow.errors", "contracts.errors"}
"""What the relay process's modules may import of the project: each other, and the error trees."""

MAX_LINES = 350


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every absolute import in ``path``; ``from x import y`` also yields ``x.y``."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return out


def _is_module(name: str) -> bool:
    parts = name.split(".")
    path = ROOT.joinpath(*parts)
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def test_no_package_imports_what_the_house_forbids() -> None:
    """Contracts import nothing of the project; analysis never imports the live half; nor the top."""
    broken = []
    for path in _modules():
        top = path.relative_to(ROOT).parts[0]
        for line, name in _imports(path):
            if name.split(".")[0] in FORBIDDEN.get(top, set()):
                broken.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert broken == []


def test_the_relay_imports_only_framing_the_channel_and_errors() -> None:
    """The relay process's modules reach no catalog, mirror, recorder, store, settings or secret."""
    broken = []
    for module in RELAY_MODULES:
        path = ROOT / "shadow" / "proxy" / f"{module}.py"
        for line, name in _imports(path):
            if name.split(".")[0] in PACKAGES and _is_module(name) and name not in RELAY_MAY_IMPORT \
                    and name not in {"shadow", "shadow.proxy", "contracts"}:
                broken.append(f"shadow/proxy/{module}.py:{line} imports {name}")
    assert broken == []


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_stay_short_or_say_why(path: Path) -> None:
    """A module over ~350 lines is split, or its docstring says why it must stay one file."""
    lines = path.read_text(encoding="utf-8").count("\n")
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert lines <= MAX_LINES or "one file" in doc, f"{lines} lines and no reason in the docstring"


def test_the_import_checker_sees_a_broken_rule(tmp_path: Path) -> None:
    """The checker itself can fail: a planted import of the sidecar from the pipelines is reported."""
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    from shadow.records.store import RecordStore\n    return RecordStore\n")
    assert (2, "shadow.records.store") in _imports(planted)
    assert "shadow" in FORBIDDEN["pipelines"]

"""The house rules: which package may import which, and how long a module may grow.

The import graph is read from the code with `ast` (imports inside functions count too), so a rule
broken anywhere fails here, not only on the paths a test happens to run. Between modules the graph has
no circle at all, not even one hidden behind ``TYPE_CHECKING`` or inside a function: a shared type moves
down, or the side that needs a few methods states them as a small ``Protocol``.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("contracts", "scorer", "shadow", "pipelines", "dashboards", "audit", "semif_shadow")
ENTRY = "semif_shadow"

FORBIDDEN = {
    "contracts": {"scorer", "shadow", "pipelines", "dashboards", "audit", ENTRY},
    "scorer": {"shadow", "pipelines", "dashboards", "audit", ENTRY},
    "shadow": {"pipelines", "dashboards", "audit", ENTRY},
    "pipelines": {"shadow", "scorer", "dashboards", "audit", ENTRY},
    "dashboards": {"shadow", "scorer", "audit", ENTRY},
    "audit": {"scorer", "dashboards", ENTRY},
}
"""Package -> top-level packages it must never import (the entry layer is imported by nothing)."""

RELAY_MODULES = ("framing", "held", "states", "hooks", "connection", "sides", "relay", "channel", "main")
RELAY_MAY_IMPORT = {f"shadow.proxy.{m}" for m in RELAY_MODULES} | {"shadow.errors", "contracts.errors",
                                                                   "contracts.tasks"}
"""What the relay process's modules may import of the project: each other, the error trees, stop_tasks."""

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


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(package: str, node: ast.AST) -> list[str]:
    """What an import statement in ``package`` may import, absolute: ``from a import b`` gives a, a.b."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        up = ".".join(parts[: len(parts) - node.level + 1])
        base = f"{up}.{base}" if base else up
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _module_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` (at ``path``) imports, relative imports resolved.

    ``from a.b import c`` imports ``a.b.c`` when that is a module, else ``a.b``; an import of a package's
    name alone leads to its ``__init__``. Imports under ``TYPE_CHECKING`` and inside functions count.
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        for imported in _imported_names(package, node):
            module = imported
            while module and module not in known:
                module = module.rpartition(".")[0]
            if module and module != name:
                found.add(module)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules it imports, over every package (a folder with ``__init__.py``) in ``root``."""
    paths = {_module_name(root, path): path for init in sorted(root.glob("*/__init__.py"))
             if init.parent.name not in {"tests", "bench"} for path in init.parent.rglob("*.py")}
    return {name: _module_imports(name, path, set(paths)) for name, path in paths.items()}


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph[node])
    return seen


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that reach each other through imports (more than one), sorted."""
    reach = {node: _reachable(graph, node) for node in graph}
    groups = {tuple(sorted({node} | {other for other in reach[node] if node in reach[other]}))
              for node in graph if node in reach[node]}
    return sorted(list(group) for group in groups)


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


def test_no_module_import_circle() -> None:
    """No two modules import each other, however indirectly, in any package (audit and demo included)."""
    assert circles(import_graph(ROOT)) == []


def test_the_circle_check_sees_a_planted_circle(tmp_path: Path) -> None:
    """A circle through a relative import, one under TYPE_CHECKING and one inside a function is found."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for init in (pkg / "__init__.py", pkg / "sub" / "__init__.py"):
        init.write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("import typing\nif typing.TYPE_CHECKING:\n    from pkg import c\n")
    (pkg / "c.py").write_text("def f():\n    from pkg.a import x\n    return x\n")
    (pkg / "d.py").write_text("from pkg.c import f\n")
    assert circles(import_graph(tmp_path)) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


_TREE_LINE = re.compile(r"^( *(?:[|+ ]   )*)(?:\+-- )?([A-Z]\w+)(?:\s|$)")


def drawn_tree(doc: str) -> dict[str, str | None]:
    """Class -> its drawn parent (None for a root), from the block after ``The tree::`` in ``doc``."""
    block = doc.split("The tree::", 1)[1].split("\n\n")
    lines = "\n".join(block[1:3] if block[0].strip() == "" else block[:2]).splitlines()
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in lines:
        if not line.strip():
            continue
        match = _TREE_LINE.match(line)
        if match is None or not line.startswith("    "):
            break
        column = line.index(match.group(2))
        while stack and stack[-1][0] >= column:
            stack.pop()
        parents[match.group(2)] = stack[-1][1] if stack else None
        stack.append((column, match.group(2)))
    return parents


def _error_modules() -> list[Path]:
    paths = sorted(ROOT.glob("*/**/errors.py"))
    return [p for p in paths if p.relative_to(ROOT).parts[0] not in {"tests", "bench"}
            and "The tree::" in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("path", _error_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_drawn_error_tree_matches_the_classes(path: Path) -> None:
    """Every exception class an errors.py defines is drawn, under its nearest drawn base; nothing else is."""
    module = importlib.import_module(_module_name(ROOT, path))
    drawn = drawn_tree(module.__doc__ or "")
    defined = {name for name, value in vars(module).items() if isinstance(value, type)
               and issubclass(value, BaseException) and value.__module__ == module.__name__}
    assert defined - set(drawn) == set(), "defined but not drawn"
    classes = {name: getattr(module, name, None) for name in drawn}
    assert {name for name, cls in classes.items() if not isinstance(cls, type)} == set(), "drawn, not a class"
    actual = {name: next((base.__name__ for base in cls.__mro__[1:] if base.__name__ in drawn), None)
              for name, cls in classes.items() if isinstance(cls, type)}
    assert actual == drawn


def test_the_tree_check_reads_a_misdrawn_tree() -> None:
    """A class drawn under the wrong parent, or at the wrong depth, reads differently from the classes."""
    doc = """Errors.

The tree::

    Base                 base
    +-- Child            one
    |   +-- Grandchild   two
    +-- Other            three

    Mixin                a second root
"""
    assert drawn_tree(doc) == {"Base": None, "Child": "Base", "Grandchild": "Child", "Other": "Base",
                               "Mixin": None}
    assert drawn_tree(doc.replace("|   +-- Grandchild", "+-- Grandchild    "))["Grandchild"] == "Base"


def test_the_import_checker_sees_a_broken_rule(tmp_path: Path) -> None:
    """The checker itself can fail: a planted import of the sidecar from the pipelines is reported."""
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    from shadow.records.store import RecordStore\n    return RecordStore\n")
    assert (2, "shadow.records.store") in _imports(planted)
    assert "shadow" in FORBIDDEN["pipelines"]



def imports_of_test_modules(tests: Path) -> list[str]:
    """``path:line imports tests.x.test_y`` for each import of a ``test_*`` module under ``tests``."""
    paths = {_module_name(tests.parent, path): path for path in sorted(tests.rglob("*.py"))}
    found = []
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            found += [f"{path.relative_to(tests.parent)}:{node.lineno} imports {imported}"
                      for imported in _imported_names(package, node)
                      if imported in paths and imported.rpartition(".")[2].startswith("test_")]
    return found


def test_no_test_module_imports_another() -> None:
    """Tests share helpers through ``harness.py`` modules and fixtures through ``conftest.py`` only.

    A test module is collected, never imported: what it defines stays its own, so an edit to one test
    file cannot break another, and no test or fixture is pulled into a second module.
    """
    assert imports_of_test_modules(ROOT / "tests") == [], "move what they share into the package's harness.py"


def test_the_test_import_check_sees_planted_imports(tmp_path: Path) -> None:
    """An absolute, a relative and a module import of a test module are found; a harness import is not."""
    pkg = tmp_path / "tests" / "a"
    pkg.mkdir(parents=True)
    for init in (tmp_path / "tests" / "__init__.py", pkg / "__init__.py"):
        init.write_text("")
    (pkg / "harness.py").write_text("def h():\n    return 1\n")
    (pkg / "test_x.py").write_text("from tests.a.harness import h\n")
    (pkg / "test_y.py").write_text("from tests.a.test_x import h\n")
    (pkg / "test_z.py").write_text("from . import test_x\n\n\ndef f():\n    import tests.a.test_y\n")
    assert imports_of_test_modules(tmp_path / "tests") == [
        "tests/a/test_y.py:1 imports tests.a.test_x",
        "tests/a/test_z.py:1 imports tests.a.test_x",
        "tests/a/test_z.py:5 imports tests.a.test_y",
    ]

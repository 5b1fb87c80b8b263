"""What the README and ``docs/*.md`` name exists in the tree they describe, so a stale line fails the suite.

Read from the live tree at test time (no list kept here), four kinds of name are checked:

- every ``semif-shadow`` command line (in a code block or a code span, at a command's position: a line's
  start or after ``|``, ``;``, ``&&``, ``$(``, variable assignments allowed before it): each subcommand is
  found by walking the click tree from `semif_shadow.cli.main` (the lazy groups' modules imported as
  ``--help`` would), and each ``--flag`` is an option of the command it follows; a ``bench/*.py`` line's
  flags appear in that script; a flag named alone in a code span belongs to some ``semif-shadow`` command
  or ``bench/`` script, or to one of the other tools the docs drive (`OTHER_TOOLS_FLAGS`);
- every ``SHADOW_*`` / ``SCORER_*`` / ``PIPELINES_*`` variable is a field of a settings class (or a bearer
  token a catalog in the tree names in ``auth_token_env``), and where a settings table states its default,
  the default is the class's;
- every repository path named in code (``shadow/proxy/relay.py``, ``pipelines/models/*.sql``) exists, and
  every dotted name under a top-level package (``shadow.clock.now``) is a module or a name it defines;
- no line points outside the repository (``../shared``): readers do not have that folder.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import pytest
import yaml
from pydantic_settings import BaseSettings

from contracts.catalog import load_catalog
from pipelines.settings import PipelineSettings
from scorer.settings import ScorerSettings
from semif_shadow.cli import main
from shadow.records.settings import RecordSettings
from shadow.sampling import is_sampled
from shadow.settings import ShadowSettings

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[1]
SETTINGS: tuple[type[BaseSettings], ...] = (ShadowSettings, RecordSettings, ScorerSettings, PipelineSettings)
PACKAGES = ("contracts", "scorer", "shadow", "pipelines", "dashboards", "semif_shadow", "audit", "bench")
TOP_DIRS = (*PACKAGES, "infra", "tests", "docs")
TOP_FILES = ("Makefile", "pyproject.toml", "CHANGELOG.md", "README.md", "LICENSE", ".dockerignore")
OTHER_TOOLS_FLAGS = {
    "--help",  # every command's
    "--strict-markers",  # pytest
    "--strict",  # mypy
    "--conf", "--packages",  # spark-submit
    "--additional-python-modules", "--python-modules-installer-option",  # AWS Glue job arguments
    "--chat_format",  # llama-cpp-python's server
}
"""Flags the docs name for tools other than ``semif-shadow`` and ``bench/``, each with its tool."""

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)
SPAN = re.compile(r"`([^`\n]+)`")
SEGMENT_SPLIT = re.compile(r"&&|\|\||[;|&]|\$\(|\)")
VARIABLE = re.compile(r"(?<![A-Za-z0-9_])((?:SHADOW|SCORER|PIPELINES)_[A-Z0-9_]*)(\*?)")
PATH = re.compile(rf"(?<![\w./:-])((?:{'|'.join(TOP_DIRS)})/[\w./*<>{{}}…-]*"
                  rf"|(?:{'|'.join(TOP_FILES)})(?![\w.-]))")
DOTTED = re.compile(rf"^(?:{'|'.join(PACKAGES)})(?:\.\w+)+$")
FILE_SUFFIXES = ("duckdb", "py", "sql", "yaml", "json", "jsonl", "md", "html", "parquet", "log", "txt", "gz")
SIZE = re.compile(r"^(\d+(?:\.\d+)?) ?(KiB|MiB|GiB)$")
SIZES = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def doc_files() -> list[Path]:
    """The README and every ``docs/*.md``, as the tree holds them now."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def code_texts(text: str) -> Iterator[tuple[str, bool]]:
    """Each fenced block's lines and each inline code span of a Markdown text, with whether it is a span."""
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            yield line.split(" #", 1)[0], False
    for span in SPAN.findall(FENCE.sub("", text)):
        yield span, True


@dataclass(frozen=True)
class Named:
    """Something a doc names: the file, the 1-based line and what was named."""

    doc: str
    line: int
    name: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.name}"


def located(doc: Path, needle: str) -> int:
    """The first line of ``doc`` holding ``needle`` (1-based; 0 if not found verbatim)."""
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            return number
    return 0


# -- commands and flags ----------------------------------------------------------------------------


def command_lines(text: str) -> Iterator[list[str]]:
    """The words of each ``semif-shadow`` / ``bench/*.py`` invocation in the text's code, from the program."""
    for code, _ in code_texts(text):
        for segment in SEGMENT_SPLIT.split(code):
            try:
                words = shlex.split(segment, comments=True)
            except ValueError:
                words = segment.split()
            while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]) or words[0] in ("sudo", "exec")):
                words = words[1:]
            if words and words[0].endswith(("python", "python3")):
                words = python_target(words[1:])
            if words and (words[0].endswith("semif-shadow") or re.match(r"^bench/\w+\.py$", words[0])):
                yield words


def python_target(words: list[str]) -> list[str]:
    """What a ``python`` line runs: its script (``-m bench.x`` read as ``bench/x.py``; ``-P`` skipped)."""
    while words and words[0].startswith("-"):
        if words[0] == "-m" and len(words) > 1:
            return [words[1].replace(".", "/") + ".py", *words[2:]]
        words = words[1:]
    return words


def check_command(words: list[str]) -> list[str]:
    """What is wrong with one invocation: an unknown subcommand or a flag its command does not take."""
    if words[0].startswith("bench/"):
        script = ROOT / words[0]
        if not script.is_file():
            return [f"no script {words[0]}"]
        source = script.read_text(encoding="utf-8")
        return [f"{words[0]} takes no {w}" for w in flags_of(words[1:]) if f'"{w}"' not in source]
    problems: list[str] = []
    command: click.Command = main
    path = ["semif-shadow"]
    for word in words[1:]:
        if word.startswith("-"):
            flag = word.split("=", 1)[0]
            if re.match(r"^--?[A-Za-z]", flag) and flag not in option_names(command):
                problems.append(f"{' '.join(path)} takes no {flag}")
            continue
        if isinstance(command, click.Group) and re.match(r"^[a-z][a-z0-9-]*$", word):
            sub = command.get_command(click.Context(command), word)
            if sub is None:
                problems.append(f"{' '.join(path)} has no subcommand {word!r}")
                break
            command, path = sub, [*path, word]
            continue
        if isinstance(command, click.Group):
            break  # a placeholder (<command>, ...) or prose after the group: nothing more to check
    return problems


def flags_of(words: list[str]) -> list[str]:
    """The ``--long`` flags among ``words`` (values after ``=`` dropped)."""
    return [w.split("=", 1)[0] for w in words if re.match(r"^--[A-Za-z]", w)]


def option_names(command: click.Command) -> set[str]:
    """Every option string ``command`` accepts, ``--help`` included."""
    names = {"--help", "-h"}
    for param in command.params:
        if isinstance(param, click.Option):
            names.update(param.opts)
            names.update(param.secondary_opts)
    return names


def all_commands(command: click.Command) -> Iterator[click.Command]:
    """``command`` and, for a group, every command under it (lazy groups imported)."""
    yield command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                yield from all_commands(sub)


def known_flags() -> set[str]:
    """Every long flag of every ``semif-shadow`` command and ``bench/`` script, and `OTHER_TOOLS_FLAGS`."""
    flags = set(OTHER_TOOLS_FLAGS)
    for command in all_commands(main):
        flags.update(name for name in option_names(command) if name.startswith("--"))
    for script in (ROOT / "bench").glob("*.py"):
        flags.update(re.findall(r"""["'](--[A-Za-z][\w-]*)["']""", script.read_text(encoding="utf-8")))
    return flags


def command_problems(doc: Path) -> list[Named]:
    """Every unknown subcommand or flag ``doc`` names."""
    text = doc.read_text(encoding="utf-8")
    problems = [Named(doc.name, located(doc, words[-1]), p)
                for words in command_lines(text) for p in check_command(words)]
    flags = known_flags()
    for code, is_span in code_texts(text):
        if is_span and code.startswith("--"):
            flag = re.split(r"[\s=.]", code, maxsplit=1)[0]
            if flag not in flags:
                problems.append(Named(doc.name, located(doc, code), f"no command takes {flag}"))
    return problems


# -- settings variables ----------------------------------------------------------------------------


def settings_fields() -> dict[str, tuple[type[BaseSettings], str]]:
    """Each settings variable's name -> (its class, its field)."""
    out = {}
    for cls in SETTINGS:
        prefix = str(cls.model_config.get("env_prefix", ""))
        for field, info in cls.model_fields.items():
            kind = info.annotation
            if isinstance(kind, type) and issubclass(kind, BaseSettings):
                continue  # a nested class: its own variables are listed from it
            out[f"{prefix}{field}".upper()] = (cls, field)
    return out


def catalog_token_variables() -> set[str]:
    """The bearer-token variables the catalogs in the tree name (``auth_token_env``)."""
    names: set[str] = set()
    for catalog in [*ROOT.glob("shadow/**/*.yaml"), *ROOT.glob("semif_shadow/**/*.yaml")]:
        data = yaml.safe_load(catalog.read_text(encoding="utf-8"))
        types = data.get("decision_types", {}) if isinstance(data, dict) else {}
        names.update(t["auth_token_env"] for t in types.values()
                     if isinstance(t, dict) and "auth_token_env" in t)
    for source in (ROOT / "semif_shadow" / "demo").glob("*.py"):
        names.update(re.findall(r"auth_token_env\W+(SHADOW_[A-Z0-9_]+)", source.read_text(encoding="utf-8")))
    return names


def variable_problems(doc: Path) -> list[Named]:
    """Every variable ``doc`` names that no settings class or catalog defines (``X_*`` must match one)."""
    fields = settings_fields()
    text = doc.read_text(encoding="utf-8")
    declared = set(re.findall(r"auth_token_env:\s*([A-Z0-9_]+)", text))  # a catalog the doc itself shows
    known = set(fields) | catalog_token_variables() | declared
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        for name, star in VARIABLE.findall(line):
            found = any(k.startswith(name) for k in known) if star else name in known
            if not found:
                problems.append(Named(doc.name, number, f"no setting {name}{star}"))
    return problems


def stated_defaults(doc: Path) -> Iterator[tuple[Named, str]]:
    """Each settings table row's (variable, the default it states); ``…_X`` names take the row's prefix.

    A settings table is one whose header's second column is ``default``.
    """
    header: list[str] = []
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            header = []
            continue
        if not header:
            header = [c.lower() for c in cells]
            continue
        if header[1:2] != ["default"] or not VARIABLE.search(cells[0]) or not cells[1]:
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        defaults = [d.strip() for d in cells[1].split(",")] if "," in cells[1] else [cells[1]] * len(names)
        if len(defaults) != len(names):
            continue
        first = names[0]
        for name, default in zip(names, defaults, strict=True):
            full = name
            if name.startswith("…_"):
                full = next((first[: i + 1] + name[2:] for i in range(len(first) - 1, 0, -1)
                             if first[i] == "_" and (first[: i + 1] + name[2:]) in settings_fields()), name)
            yield Named(doc.name, number, full), default


PROSE_DEFAULT = re.compile(
    r"`((?:SHADOW|SCORER|PIPELINES)_[A-Z0-9_]+)` \((\d+(?:\.\d+)?(?: ?[KMG]iB)?)(?: m?s)?\)")
"""A default stated in prose, as in ```SHADOW_PROXY_HELD_BYTES` (64 MiB)``."""


def prose_defaults(doc: Path) -> Iterator[tuple[Named, str]]:
    """Each ``VARIABLE (value)`` of the doc's prose, with the value it states."""
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
        for name, value in PROSE_DEFAULT.findall(line):
            yield Named(doc.name, number, name), value


def default_matches(stated: str, cls: type[BaseSettings], field: str) -> bool | None:  # noqa: PLR0911  (one per kind)
    """Whether a table's stated default is the field's (None: prose the test cannot read: ``host name``)."""
    info = cls.model_fields[field]
    text = re.sub(r"\s*\(.*\)$", "", stated.strip("`* ")).strip("`")
    if text == "required":
        return info.is_required()
    if info.default_factory is not None or info.is_required():
        return None
    actual: Any = info.default
    if text == "unset":
        return actual is None
    if hasattr(actual, "get_secret_value"):
        return None
    size = SIZE.match(text)
    if size:
        return bool(actual == float(size.group(1)) * SIZES[size.group(2)])
    if isinstance(actual, bool):
        return text in ("true", "false") and (text == "true") == actual
    if isinstance(actual, (int, float)):
        try:
            return float(text.replace("_", "")) == float(actual)
        except ValueError:
            return None
    return text == str(actual)


def default_problems(doc: Path) -> list[Named]:
    """Every settings table default in ``doc`` that is not the settings class's default."""
    fields = settings_fields()
    problems = []
    for named, stated in [*stated_defaults(doc), *prose_defaults(doc)]:
        if named.name not in fields:
            continue  # reported by variable_problems when unknown
        cls, field = fields[named.name]
        if default_matches(stated, cls, field) is False:
            actual = cls.model_fields[field].default
            said = f"{named.name}: docs say {stated!r}, code {actual!r}"
            problems.append(Named(named.doc, named.line, said))
    return problems


# -- repository paths ------------------------------------------------------------------------------


def path_exists(name: str) -> bool:
    """Whether ``name`` (a path under the root, a glob, a folder with a trailing slash) exists in the tree."""
    name = re.split(r"[#:]", name, maxsplit=1)[0].rstrip(".,;")
    if "*" in name:
        return any(ROOT.glob(name))
    return (ROOT / name).exists()


def dotted_exists(name: str) -> bool:
    """Whether a dotted name is a module of the tree or a name one of its modules defines or logs under."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if not module.is_file():
            continue
        rest = parts[cut:]
        if not rest:
            return True
        source = module.read_text(encoding="utf-8")
        if re.search(rf"(def|class) {rest[0]}\b|^{rest[0]}\b|\b{rest[0]}:|\b{rest[0]} =", source,
                     flags=re.MULTILINE):
            return True
        break
    return any(f'"{name}"' in p.read_text(encoding="utf-8") for p in ROOT.glob(f"{parts[0]}/**/*.py"))


def tree_paths(block: str) -> Iterator[str]:
    """The paths of a layout tree: a block whose first line is a top folder, each level indented two spaces.

    ``scorer/`` then ``  server/`` then ``    app.py`` is ``scorer/server/app.py``; a line whose first word is
    not a file or folder name (a comment's continuation) is left out.
    """
    lines = block.splitlines()
    if not lines or not re.match(rf"^(?:{'|'.join(TOP_DIRS)})/(\s|$)", lines[0]):
        return
    stack: list[str] = []
    for line in lines:
        entry = re.match(r"^( *)([\w.-]+/?)(\s|$)", line)
        if entry is None or not (entry.group(2).endswith("/") or "." in entry.group(2)):
            continue
        level = len(entry.group(1)) // 2
        stack = [*stack[:level], entry.group(2).rstrip("/")]
        if len(stack) == level + 1:
            yield "/".join(stack)


def path_problems(doc: Path) -> list[Named]:
    """Every repository path or dotted module name ``doc``'s code names that the tree lacks."""
    text = doc.read_text(encoding="utf-8")
    problems = []
    links = re.findall(r"\]\(([^)#\s]+)", text)
    codes = [code for code, _ in code_texts(text)]
    for code in [*codes, *links]:
        for name in PATH.findall(code):
            if any(mark in name for mark in ("<", "{", "...", "…")) or name in ("docs/", "tests/"):
                continue
            if not path_exists(name):
                problems.append(Named(doc.name, located(doc, name), f"no path {name}"))
    for block in FENCE.findall(text):
        problems += [Named(doc.name, located(doc, name.rsplit("/", 1)[-1]), f"no path {name} (layout tree)")
                     for name in tree_paths(block) if not (ROOT / name).exists()]
    for code, is_span in code_texts(text):
        dotted = code.strip("()")
        if (is_span and DOTTED.match(dotted) and not dotted.endswith(FILE_SUFFIXES)
                and not dotted_exists(dotted)):
            problems.append(Named(doc.name, located(doc, dotted), f"no module or name {dotted}"))
    return problems


# -- the tests -------------------------------------------------------------------------------------

DOCS = doc_files()
IDS = [p.name for p in DOCS]


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_commands_and_flags_named_exist(doc: Path) -> None:
    """Every ``semif-shadow`` subcommand and flag the doc names is a click command's; bench/'s in bench/."""
    problems = command_problems(doc)
    assert not problems, "\n".join(map(str, problems))


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_settings_variables_named_exist_with_their_defaults(doc: Path) -> None:
    """Every ``SHADOW_*`` / ``SCORER_*`` / ``PIPELINES_*`` named is a setting, with its table's default."""
    problems = variable_problems(doc) + default_problems(doc)
    assert not problems, "\n".join(map(str, problems))


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_repository_paths_named_exist(doc: Path) -> None:
    """Every repository path and dotted module name the doc's code names exists in the tree."""
    problems = path_problems(doc)
    assert not problems, "\n".join(map(str, problems))


def test_nothing_points_outside_the_repository() -> None:
    """No doc, code file or configuration names ``../shared``: readers of the repository lack that folder."""
    suffixes = {".md", ".py", ".sql", ".yaml", ".yml", ".toml", ".json", ".sh", ".cfg"}
    files = [p for p in ROOT.rglob("*") if p.is_file() and (p.suffix in suffixes or p.name == "Makefile")
             and not {".venv", ".git", "node_modules"} & set(p.relative_to(ROOT).parts)]
    outside = "../" + "shared"  # spelled apart so this file does not name it
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in files if p != Path(__file__)
            for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), start=1)
            if outside in line]
    assert not hits, hits


def printed_answers(text: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each ``# 202 {...}`` answer a doc prints under a ``/v1/decisions`` call, with its decision type."""
    for block in FENCE.findall(text):
        kind = re.search(r'"decision_type": "([^"]+)"', block)
        for answer in re.findall(r"^# 202 (\{.*\})$", block, flags=re.MULTILINE):
            if kind is not None:
                yield kind.group(1), json.loads(answer)


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_printed_answers_are_what_the_example_catalog_samples(doc: Path) -> None:
    """A printed ``/v1/decisions`` answer says queued exactly for the ids the example catalog samples."""
    catalog = load_catalog(ROOT / "shadow" / "examples" / "catalog.yaml")
    for kind, answer in printed_answers(doc.read_text(encoding="utf-8")):
        sampling = catalog.decision_types[kind].sampling
        for decision in answer["decisions"]:
            sampled = is_sampled(decision["decision_id"], sampling.rate, sampling.salt)
            assert decision["queued"] is sampled, f"{doc.name}: {decision} (sampled: {sampled})"
            assert decision["reason"] == (None if sampled else "not_sampled"), decision
        assert answer["queued"] == sum(d["queued"] for d in answer["decisions"]), answer


def test_the_checks_see_a_stale_line() -> None:
    """Each check fails on a line naming what does not exist, so a passing run means something."""
    assert check_command(["semif-shadow", "records", "vacuum"]) == [
        "semif-shadow records has no subcommand 'vacuum'"]
    assert check_command(["semif-shadow", "demo", "--tickets", "3", "--colour"]) == [
        "semif-shadow demo takes no --colour"]
    assert check_command(["semif-shadow", "-v", "sidecar", "run", "--catalog", "c.yaml"]) == []
    fields = settings_fields()
    assert "SHADOW_RECORDS_ROOT" in fields
    assert "SHADOW_NO_SUCH_SETTING" not in fields
    assert default_matches("4 MiB", RecordSettings, "buffer_bytes") is True
    assert default_matches("2", ShadowSettings, "workers") is False
    assert default_matches("unset", ShadowSettings, "kill_switch_file") is True
    assert default_matches("host name", RecordSettings, "writer_id") is None
    assert [value for _, value in prose_defaults(ROOT / "docs" / "security.md")], "no prose default read"
    held = "`SHADOW_PROXY_HELD_BYTES` (32 MiB)"
    assert PROSE_DEFAULT.findall(held) == [("SHADOW_PROXY_HELD_BYTES", "32 MiB")]
    assert default_matches("32 MiB", ShadowSettings, "proxy_held_bytes") is False
    assert path_exists("pipelines/models/*/*.sql")
    assert not path_exists("scorer/demo.py")
    assert dotted_exists("shadow.clock.now")
    assert not dotted_exists("shadow.clock.then")
    text = "```sh\nX=1 semif-shadow serve &   # note\n```\n`kubectl x semif-shadow --y`"
    assert list(command_lines(text)) == [["semif-shadow", "serve"]]
    assert python_target(["-P", "-m", "bench.soak", "--runs", "1"]) == ["bench/soak.py", "--runs", "1"]
    assert check_command(["bench/soak.py", "--runs", "1", "--colour"]) == ["bench/soak.py takes no --colour"]
    assert list(tree_paths("scorer/\n  server/\n    app.py   the app\n  continued prose\n  cli.py")) == [
        "scorer", "scorer/server", "scorer/server/app.py", "scorer/cli.py"]

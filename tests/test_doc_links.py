"""Every relative link of the README and ``docs/*.md`` resolves: the file exists and the anchor is a heading.

Anchors are GitHub's: a heading's text lowercased, code marks and punctuation (but ``-`` and ``_``)
dropped, each space a ``-``; a repeated heading gets ``-1``, ``-2`` in order. Links to other sites
(``http:``, ``https:``, ``mailto:``) are not followed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```.*?^```", flags=re.DOTALL | re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", flags=re.MULTILINE)


def doc_files() -> list[Path]:
    """The README and every ``docs/*.md``."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a Markdown text (fenced blocks left out), repeats numbered as GitHub does."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def link_problems(doc: Path) -> list[str]:
    """Each relative link of ``doc`` whose file is missing or whose anchor is no heading of that file."""
    text = doc.read_text(encoding="utf-8")
    problems = []
    for target in LINK.findall(FENCE.sub("", text)):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = doc if not path else (doc.parent / path).resolve()
        if not linked.exists():
            problems.append(f"{doc.name}: {target}: no file {path}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text(encoding="utf-8")):
            problems.append(f"{doc.name}: {target}: no heading #{anchor} in {linked.name}")
    return problems


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: p.name)
def test_relative_links_and_anchors_resolve(doc: Path) -> None:
    """Every relative link of the doc names a file that exists and, with ``#anchor``, one of its headings."""
    problems = link_problems(doc)
    assert not problems, "\n".join(problems)


def test_the_link_check_sees_a_broken_link(tmp_path: Path) -> None:
    """A missing file and a missing anchor are reported; GitHub's anchors of code-marked headings match."""
    assert slug("Audits (`source = 'audit'`)") == "audits-source--audit"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}
    page = tmp_path / "page.md"
    page.write_text("## Shutdown bound\n[ok](#shutdown-bound) [bad](#shutdown) [gone](other.md)\n")
    assert link_problems(page) == ["page.md: #shutdown: no heading #shutdown in page.md",
                                   "page.md: other.md: no file other.md"]

"""Reading the workbench's pages as a scripted auditor would: the hidden fields of its forms."""

from __future__ import annotations

import re
from html import unescape

_INPUT = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


def hidden(page: str) -> dict[str, str]:
    """The hidden form fields of a page (the first value of each name)."""
    found: dict[str, str] = {}
    for name, value in _INPUT.findall(page):
        found.setdefault(unescape(name), unescape(value))
    return found


def option_values(page: str) -> list[str]:
    """The answer buttons' values, in page order."""
    return [unescape(v) for v in re.findall(r'<button type="submit" name="answer" value="([^"]*)"', page)]

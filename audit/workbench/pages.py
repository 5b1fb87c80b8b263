"""The workbench's HTML: every value from the records or the catalog is escaped (text, never markup).

No inline script or style (the Content-Security-Policy allows neither): behaviour comes from
``/static/workbench.js`` (keyboard) and looks from ``/static/workbench.css``. Every control is a plain
form, so the page also works with scripts off.
"""

from __future__ import annotations

import json
from html import escape
from typing import TYPE_CHECKING, Any

from contracts.records import NONE_OF_THESE
from shadow.redaction import HASH_PREFIX

if TYPE_CHECKING:
    from audit.workbench.reading import SampleRow
    from audit.workbench.sessions import Session
    from audit.workbench.worklist import Progress
    from contracts.catalog import DecisionType

HEAD = ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>{title}</title><link rel="stylesheet" href="/static/workbench.css">'
        '<script src="/static/workbench.js" defer></script></head>\n<body>\n')
TAIL = "</body></html>\n"
DIGITS = "123456789"


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _hidden(name: str, value: str) -> str:
    return f'<input type="hidden" name="{_e(name)}" value="{_e(value)}">'


def _flatten(node: Any, path: str, out: list[tuple[str, Any]]) -> None:
    if isinstance(node, dict) and node:
        for key in sorted(node):
            _flatten(node[key], f"{path}.{key}" if path else str(key), out)
    elif isinstance(node, list) and node:
        for i, item in enumerate(node):
            _flatten(item, f"{path}[{i}]", out)
    else:
        out.append((path, node))


def _plain_path(path: str) -> str:
    """``items[2].sku`` -> ``items.sku``: the catalog's dotted form."""
    parts = [p.split("[", 1)[0] for p in path.split(".")]
    return ".".join(parts)


def _under(path: str, rules: list[str]) -> bool:
    return any(path == rule or path.startswith(rule + ".") for rule in rules)


def state_rows(stored: str | None, dtype: DecisionType) -> list[tuple[str, str, bool]]:
    """``(field, value text, hashed)`` of the stored state; removed fields never, hashed ones as hashed."""
    if stored is None:
        return []
    try:
        parsed = json.loads(stored)
    except ValueError:
        return [("", stored, False)]
    if not isinstance(parsed, dict):
        return [("", stored, False)]
    flat: list[tuple[str, Any]] = []
    _flatten(parsed, "", flat)
    rows = []
    for path, value in flat:
        plain = _plain_path(path)
        if _under(plain, dtype.state.remove):  # already removed before storing; a second guard
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        hashed = isinstance(value, str) and value.startswith(HASH_PREFIX)
        if _under(plain, dtype.state.hash) and not hashed:
            text, hashed = "(hashed field: value not shown)", True
        rows.append((path, text, hashed))
    return rows


def _state_html(stored: str | None, dtype: DecisionType) -> str:
    rows = state_rows(stored, dtype)
    if stored is None:
        return '<p class="none">The state of this decision was not stored (catalog: state.store).</p>'
    body = "".join(
        f'<tr><th scope="row">{_e(path)}</th><td>'
        + ('<span class="hashed">hashed</span> ' if hashed else "")
        + f"<code>{_e(text)}</code></td></tr>"
        for path, text, hashed in rows)
    return f'<table class="state"><tbody>{body}</tbody></table>'


def _progress_html(progress: Progress, session: Session) -> str:
    return (f'<header><p><strong id="progress">{progress.given} of {progress.needed}</strong> answers in '
            f"({progress.decisions} decisions, {progress.doubles} for two auditors) &middot; "
            f"{progress.yours} yours &middot; signed in as <code>{_e(session.auditor)}</code></p>"
            f'<form method="post" action="/sign-out">{_hidden("csrf", session.csrf)}'
            '<button type="submit">Sign out</button></form></header>\n')


def decision_page(  # noqa: PLR0913, PLR0917  (a page of six parts)
        row: SampleRow, dtype: DecisionType, stored: str | None, session: Session, progress: Progress,
        note_max: int) -> str:
    """One decision: the stored state, the question, the options in catalog order and "none of these"."""
    ids = [_hidden("csrf", session.csrf), _hidden("sample_id", row.sample_id),
           _hidden("decision_type", row.decision_type), _hidden("decision_id", row.decision_id)]
    options = []
    for i, option in enumerate(dtype.options):
        key = DIGITS[i] if i < len(DIGITS) else ""
        kbd = f"<kbd>{key}</kbd> " if key else ""
        options.append(f'<li><button type="submit" name="answer" value="{_e(option.id)}" data-key="{key}">'
                       f'{kbd}{_e(option.text)} <code>{_e(option.id)}</code></button></li>')
    options.append(f'<li><button type="submit" name="answer" value="{_e(NONE_OF_THESE)}" data-key="n">'
                   "<kbd>n</kbd> None of these</button></li>")
    return (HEAD.format(title=_e(f"Audit: {row.decision_type}"))
            + _progress_html(progress, session)
            + f'<main><h1 id="question">{_e(dtype.question)}</h1>'
            + f'<p class="meta">Decision <code id="decision-id">{_e(row.decision_id)}</code> '
            + f"&middot; {_e(row.decision_type)}</p>"
            + f"<section><h2>What was known</h2>{_state_html(stored, dtype)}</section>"
            + '<form method="post" action="/answers" id="answer">' + "".join(ids)
            + f'<ol class="options">{"".join(options)}</ol>'
            + '<label for="note">Note (optional)</label>'
            + f'<textarea id="note" name="note" maxlength="{note_max}"></textarea></form>'
            + f'<div class="actions"><form method="post" action="/skip">{"".join(ids)}'
            + '<button type="submit" data-key="s"><kbd>s</kbd> Skip</button></form>'
            + f'<form method="post" action="/undo">{_hidden("csrf", session.csrf)}'
            + '<button type="submit" data-key="u"><kbd>u</kbd> Back to my last answer</button></form></div>'
            + "</main>\n" + TAIL)


def done_page(session: Session, progress: Progress) -> str:
    """Nothing left for this auditor."""
    return (HEAD.format(title="Audit: done") + _progress_html(progress, session)
            + '<main><h1 id="done">Nothing left to answer for you in this sample.</h1>'
            + f'<form method="post" action="/undo">{_hidden("csrf", session.csrf)}'
            + '<button type="submit" data-key="u"><kbd>u</kbd> Back to my last answer</button></form>'
            + "</main>\n" + TAIL)


def sign_in_page(nonce: str, week: str, back: str) -> str:
    """The sign-in form: the decision type's token and a pseudonym (then on to ``back``, if given)."""
    return (HEAD.format(title="Audit: sign in")
            + f"<main><h1>Audit {_e(week)}: sign in</h1>"
            + f'<form method="post" action="/sign-in">{_hidden("csrf", nonce)}{_hidden("next", back)}'
            + '<label for="token">Token</label><input id="token" name="token" type="password" '
            + 'autocomplete="off" required>'
            + '<label for="auditor">Pseudonym (not your e-mail)</label><input id="auditor" name="auditor" '
            + 'autocomplete="username" required pattern="[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}">'
            + '<button type="submit">Sign in</button></form></main>\n' + TAIL)

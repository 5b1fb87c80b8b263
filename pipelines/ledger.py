"""The evidence ledger: cumulative mature labelled counts per decision type, model key and policy.

A week's ``evidence`` rows (``models/marts/evidence.sql``) hold that week's counts at each policy: the
week's own thresholds (policy ``none``) and every policy file given to the run (``PIPELINES_POLICIES`` /
``pipelines run --policy``; the policy's key is ``policy_key``). ``carry`` then adds the ledger columns,
for both engines, on the DuckDB connection that writes the marts:

1. **Prior.** The latest ``evidence`` week already written under the output folder before the run's first
   target week (``<out>/evidence/week=W/part-0.parquet``): one row per ledger, with its cumulative counts
   and ``counted_through``, the last week whose counts they hold.
2. **Add the mature weeks.** For each target week in order, every later week of the window (the read
   window includes the reference weeks before the targets) that is mature at ``as_of`` is added once
   (a policy's ledger only the weeks after the week it was chosen on: out of sample, never its own);
   weeks not yet mature are summed apart as ``provisional_*`` and never enter the ledger until a later run
   finds them mature (a week rerun before it matures therefore changes nothing in the ledger).
   **Late labels.** ``ledger_recent`` (JSON) keeps what each recent week added; a later run reading it
   again (a reference week) adds the difference: late labels enter once, never twice, within the window.
3. **Reset, never silently.** A ledger is keyed by model key (one model identity) and policy, so a new
   identity or policy starts a new ledger at zero: ``reset_reason`` says ``new model identity`` (with
   ``reset_from``, a key the candidate had before: its evidence is not carried over), ``policy changed``
   (``reset_from``: the previous policy of that key), ``first look``, or ``weeks missing`` (weeks between
   the prior's ``counted_through`` and the window were never read).
4. **Bounds.** ``precision_lower`` / ``precision_upper`` and ``severe_upper`` are the anytime-valid bounds
   (``pipelines.confseq``) at ``evidence_alpha`` on the ledger's counts: valid at every look.

Ledgers of earlier weeks are carried forward (zero week counts) so that a week without decisions does not
reset them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipelines.confseq import lower_bound, upper_bound
from pipelines.errors import BadArgument
from pipelines.mart_schema import DECLARED, LEDGER, SQL_TYPES
from pipelines.sqlmodels import quote_ident
from pipelines.weeks import as_utc, parse_week, week_label

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

    from pipelines.storage import Root
    from pipelines.weeks import Window

NO_POLICY = "none"
"""The policy key of the week's own per-option thresholds (``int_accepted``)."""
WEEK_COUNTS = ("scored", "accepted", "accepted_labelled", "accepted_correct", "severe_errors")
LEDGER_COUNTS = ("accepted_labelled", "accepted_correct", "severe_errors")
ByWeek = dict[dt.date, dict[tuple[str, str, str], dict[str, Any]]]
"""A run's weekly ``evidence`` rows: week -> (decision type, model key, policy) -> row."""


def policy_key(path: Path) -> str:
    """A policy's key in the ledger: the first 12 hex of its file's sha256 (as the review names it)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    except OSError as exc:
        raise BadArgument(f"cannot read {path}: {exc}", "policy") from exc


def chosen_weeks(paths: list[Path]) -> dict[str, str]:
    """Each policy's key -> the ISO week it was chosen on (its ledger counts only later weeks)."""
    if not paths:
        return {}
    from pipelines.policy import load_policy  # noqa: PLC0415  (see policy_rows)

    return {policy_key(path): load_policy(path).chosen_on for path in paths}


def policy_rows(paths: list[Path]) -> list[list[object]]:
    """``cfg_policies`` rows of the policy files: decision type, model key, policy key, option id, grid index.

    (A null grid index: the option is never accepted.) ``pipelines.policy`` is imported only with policies
    to read: it imports scipy.stats, about 1 CPU-s of every run otherwise.
    """
    if not paths:
        return []
    from pipelines.policy import load_policy  # noqa: PLC0415  (see the docstring)

    policies = [(load_policy(path), policy_key(path)) for path in paths]
    return [
        [p.decision_type, p.model_key, key, o["option_id"], o["grid_index"]]
        for p, key in policies
        for o in p.options
    ]


@dataclass
class Book:
    """One ledger while it is carried through the run's weeks."""

    decision_type: str
    model_key: str
    candidate: str | None
    policy: str
    first_week: str | None = None
    counted_through: str | None = None
    weeks: int = 0
    looks: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LEDGER_COUNTS, 0))
    reset_reason: str = "first look"
    reset_week: str | None = None
    reset_from: str | None = None
    recent: dict[str, list[int]] = field(default_factory=dict)
    """ISO week -> the counts it added (``LEDGER_COUNTS``), for the weeks a later run may read again."""

    @classmethod
    def from_prior(cls, row: dict[str, Any]) -> Book:
        """A ledger as the prior week's row left it."""
        return cls(
            row["decision_type"],
            row["model_key"],
            row["candidate"],
            row["policy"],
            row["ledger_first_week"],
            row["counted_through"],
            int(row["weeks_covered"]),
            int(row["looks"]),
            {c: int(row[f"ledger_{c}"]) for c in LEDGER_COUNTS},
            row["reset_reason"],
            row["reset_week"],
            row["reset_from"],
            json.loads(row.get("ledger_recent") or "{}"),
        )


def prior_rows(out: Path | None, first_target: dt.date) -> list[dict[str, Any]]:
    """The rows of the latest ``evidence`` week written under ``out`` before ``first_target`` (or none)."""
    folder = None if out is None else out / "evidence"
    if folder is None or not folder.is_dir():
        return []
    weeks = sorted(
        p.name.removeprefix("week=")
        for p in folder.glob("week=*")
        if (p / "part-0.parquet").is_file() and parse_week(p.name.removeprefix("week=")) < first_target
    )
    if not weeks:
        return []
    table = pq.read_table(folder / f"week={weeks[-1]}" / "part-0.parquet")
    return [
        row
        for row in table.to_pylist()
        if row.get("counted_through") is not None or row.get("weeks_covered") is not None
    ]


def fetch_prior(root: Root, folder: Path, first_target: dt.date) -> str | None:
    """For marts written to S3 (computed in a scratch folder): the ledger's prior week copied into it.

    The latest ``evidence`` week under ``root`` before ``first_target`` becomes
    ``<folder>/evidence/week=W/part-0.parquet``, where ``carry`` reads it; the week's label, or None.
    """
    selector = pafs.FileSelector(root.join("evidence"), allow_not_found=True)
    try:
        found = root.fs.get_file_info(selector)
        weeks: list[str] = sorted(
            str(i.base_name).removeprefix("week=")
            for i in found
            if i.base_name.startswith("week=")
            and parse_week(i.base_name.removeprefix("week=")) < first_target
        )
        if not weeks:
            return None
        target = folder / "evidence" / f"week={weeks[-1]}" / "part-0.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        with root.fs.open_input_stream(
            root.join("evidence", f"week={weeks[-1]}", "part-0.parquet")
        ) as stream:
            target.write_bytes(stream.read())
    except (pa.ArrowException, OSError) as exc:
        raise BadArgument(f"cannot read the evidence ledger under {root.uri}: {exc}", "out") from exc
    return weeks[-1]


def open_book(
    key: tuple[str, str, str], candidate: str | None, books: dict[tuple[str, str, str], Book], week: str
) -> Book:
    """A new ledger for ``key``, saying why there was none: a new identity, a new policy, or a first look."""
    decision_type, model_key, policy = key
    book = Book(decision_type, model_key, candidate, policy, reset_week=week)
    same_candidate = [
        b
        for b in books.values()
        if b.decision_type == decision_type
        and b.policy == policy
        and b.candidate == candidate
        and b.model_key != model_key
        and candidate is not None
    ]
    other_policy = [
        b
        for b in books.values()
        if b.decision_type == decision_type
        and b.model_key == model_key
        and b.policy != policy
        and NO_POLICY not in {b.policy, policy}
    ]
    if same_candidate:
        book.reset_reason, book.reset_from = "new model identity", same_candidate[-1].model_key
    elif other_policy:
        book.reset_reason, book.reset_from = "policy changed", other_policy[-1].policy
    return book


def carry(con: duckdb.DuckDBPyConnection, window: Window, out: Path | None, alpha: float,
          chosen: dict[str, str] | None = None) -> None:
    """Replace the connection's ``evidence`` table by its rows with the ledger columns filled (see above).

    The model's table has the week's columns only: the ledger's (``mart_schema.LEDGER``) are added to it
    here, with their declared types. ``chosen``: policy key -> the week it was chosen on (``chosen_weeks``).
    """
    weekly = con.sql("select * from evidence order by week_start, decision_type, model_key, policy")
    rows = [dict(zip(weekly.columns, r, strict=True)) for r in weekly.fetchall()]
    by_week: dict[dt.date, dict[tuple[str, str, str], dict[str, Any]]] = {}
    for row in rows:
        by_week.setdefault(row["week_start"], {})[row["decision_type"], row["model_key"], row["policy"]] = row
    targets = window.targets()
    books = {
        (r["decision_type"], r["model_key"], r["policy"]): Book.from_prior(r)
        for r in prior_rows(out, targets[0])
    }
    output: list[dict[str, Any]] = []
    for target in targets:
        before = dict(books)  # a new key is compared with the ledgers that existed before it
        for key, row in sorted(by_week.get(target, {}).items()):
            if key not in books:
                books[key] = open_book(key, row["candidate"], before, week_label(target))
        for key, book in sorted(books.items()):
            book.looks += 1
            output.append(ledger_row(book, key, target, by_week, window, alpha, (chosen or {}).get(key[2])))
    # Rows go back as bound parameters into the table the model built (its declared types): an Arrow
    # table registered in DuckDB, or built from Python rows, would import pandas into every run.
    columns = [name for name, _ in DECLARED["evidence"]]
    for name, kind in LEDGER:
        con.execute(f"alter table evidence add column if not exists {quote_ident(name)} {SQL_TYPES[kind]}")
    con.execute("delete from evidence")
    if output:
        names = ", ".join(quote_ident(name) for name in columns)
        slots = ", ".join("?" for _ in columns)
        con.executemany(f"insert into evidence ({names}) values ({slots})",  # noqa: S608  (quoted names)
                        [[row[name] for name in columns] for row in output])


def ledger_row(  # noqa: PLR0913, PLR0917  (one ledger, one week, and the run's context)
    book: Book,
    key: tuple[str, str, str],
    target: dt.date,
    by_week: dict[dt.date, dict[tuple[str, str, str], dict[str, Any]]],
    window: Window,
    alpha: float,
    chosen_on: str | None = None,
) -> dict[str, Any]:
    """Add the weeks after ``book.counted_through`` up to ``target`` (mature ones to the ledger); one row.

    ``chosen_on``: the policy's week; it and the weeks before it are never added (in sample).
    """
    first = None if chosen_on is None else parse_week(chosen_on) + dt.timedelta(weeks=1)
    start = window.first - dt.timedelta(weeks=window.reference_weeks)
    after = (
        start if book.counted_through is None else parse_week(book.counted_through) + dt.timedelta(weeks=1)
    )
    if after < start:
        book.counts = dict.fromkeys(LEDGER_COUNTS, 0)
        book.reset_reason, book.reset_week, book.reset_from = "weeks missing", week_label(start), None
        book.first_week, book.weeks, after = None, 0, start
    provisional = dict.fromkeys(LEDGER_COUNTS, 0)
    revise(book, key, by_week, window, start, after, first)
    monday = after
    while monday <= target:
        counts = by_week.get(monday, {}).get(key)
        if first is not None and monday < first:
            counts = None  # the policy's own week and earlier: in sample
        if window.is_mature(monday):
            if counts is not None:
                for c in LEDGER_COUNTS:
                    book.counts[c] += int(counts[c])
                book.recent[week_label(monday)] = [int(counts[c]) for c in LEDGER_COUNTS]
                book.weeks += 1
                book.first_week = book.first_week or week_label(monday)
            book.counted_through = week_label(monday)
        elif counts is not None:
            for c in LEDGER_COUNTS:
                provisional[c] += int(counts[c])
        monday += dt.timedelta(weeks=1)
    week = by_week.get(target, {}).get(key) or {}
    n, correct, severe = (book.counts[c] for c in LEDGER_COUNTS)
    return {
        "decision_type": key[0],
        "week_start": target,
        "week": week_label(target),
        "model_key": key[1],
        "candidate": book.candidate,
        "policy": key[2],
        **{c: int(week.get(c) or 0) for c in (*WEEK_COUNTS, "labelled", "unlabelled")},
        **{c: week.get(c) for c in CONFIDENCE_COLUMNS},
        "ledger_first_week": book.first_week,
        "counted_through": book.counted_through,
        "weeks_covered": book.weeks,
        "looks": book.looks,
        **{f"ledger_{c}": book.counts[c] for c in LEDGER_COUNTS},
        **{f"provisional_{c}": provisional[c] for c in LEDGER_COUNTS},
        "precision_lower": float(lower_bound(correct, n, alpha)) if n else None,
        "precision_upper": float(upper_bound(correct, n, alpha)) if n else None,
        "severe_upper": float(upper_bound(severe, n, alpha)) if n else None,
        "alpha": alpha,
        "reset_reason": book.reset_reason,
        "reset_week": book.reset_week,
        "reset_from": book.reset_from,
        "matures_at": as_utc(target + dt.timedelta(weeks=1)) + window.maturity_lag,
        "ledger_recent": json.dumps(
            {w: v for w, v in sorted(book.recent.items())
             if parse_week(w) >= target - dt.timedelta(weeks=window.reference_weeks)}, separators=(",", ":")),
    }


def revise(book: Book, key: tuple[str, str, str], by_week: ByWeek,  # noqa: PLR0913, PLR0917
           window: Window, start: dt.date, after: dt.date, first: dt.date | None) -> None:
    """Add what counted weeks this run reads again gained since (no gain in labels: nothing changes)."""
    for label, added in list(book.recent.items()):
        monday = parse_week(label)
        before_policy = first is not None and monday < first
        if not start <= monday < after or before_policy or not window.is_mature(monday):
            continue
        counts = by_week.get(monday, {}).get(key)
        now = [int(counts[c]) if counts is not None else 0 for c in LEDGER_COUNTS]
        if now[0] <= added[0]:
            continue
        for c, new, old in zip(LEDGER_COUNTS, now, added, strict=True):
            book.counts[c] += new - old
        book.recent[label] = now


CONFIDENCE_COLUMNS = (
    "labelled_confidence_mean",
    "labelled_confidence_sd",
    "unlabelled_confidence_mean",
    "unlabelled_confidence_sd",
)

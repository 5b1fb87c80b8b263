"""Where a pass keeps ``int_decisions``: in DuckDB's memory, or in a DuckDB file when the pass is far larger.

A pass's decisions table is about 160 bytes a proposal. Beyond ``memory_limit`` DuckDB spills it to its temp
files, and an in-memory table's block is written there again each time a later model reads it back and it is
evicted once more: where the table is several times the limit, every model after ``int_decisions`` writes
about as much as it reads. A table in a DuckDB file is written once, when it is built (uncompressed and not
synced: as cheap to write as a spill), and an evicted block is only dropped. So a pass whose proposals'
Parquet bytes pass ``PIPELINES_DISK_RATIO`` times the memory limit builds ``int_decisions`` in a file under
the spill directory, attached for the pass and removed after it; the models read it by name through DuckDB's
search path. The marts are the same either way.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipelines.sqlmodels import quote_ident

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

    from pipelines.source import WindowFiles

ALIAS = "pass_decisions"
"""The name the file is attached under."""

UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
"""DuckDB's size units (``1GB`` is 10^9 bytes, ``1GiB`` 2^30), lower-cased."""


def size_bytes(text: str) -> int | None:
    """A DuckDB size setting (``1250MB``, ``8 GiB``) in bytes; None where it is not one (a percentage)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if match is None or match[2].lower() not in UNITS:
        return None
    return int(float(match[1]) * UNITS[match[2].lower()])


LEFTOVER = re.compile(r"decisions-(\d+)-[0-9a-f]{8}\.duckdb(\.wal)?")
"""A decisions file's name: the process that made it, a random part, and DuckDB's write-ahead log."""


def remove_leftovers(directory: Path) -> list[str]:
    """Delete the decisions files of runs whose process is gone (killed before it could); their names."""
    removed = []
    for leftover in directory.iterdir():
        match = LEFTOVER.fullmatch(leftover.name)
        if match is None or alive(int(match[1])):
            continue
        leftover.unlink(missing_ok=True)
        removed.append(leftover.name)
    return removed


def alive(pid: int) -> bool:
    """Whether a process with this id exists (another user's counts: its file is not ours to remove)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    return True


@dataclass
class DecisionStore:
    """Chooses, per pass, the table ``int_decisions`` is built as; owns the file while one is attached."""

    limit: int | None
    """``memory_limit`` in bytes (None: not a size, so every pass stays in memory)."""
    ratio: float
    """A pass goes to disk where its proposals' Parquet bytes pass ``ratio`` x ``limit`` (0: never)."""
    directory: Path
    path: Path | None = None

    def on_disk(self, files: WindowFiles | None) -> bool:
        """Whether this pass's decisions go to the file (never without a known limit or the pass's files)."""
        if self.limit is None or files is None or not self.ratio:
            return False
        return sum(files.proposal_bytes.get(t, 0) for t in files.proposals) > self.ratio * self.limit

    def target(self, con: duckdb.DuckDBPyConnection, name: str) -> str:
        """The qualified name of ``name`` in the file, attaching it and adding it to the search path once."""
        if self.path is None:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)  # the decisions are the job's alone
            remove_leftovers(self.directory)
            path = self.directory / f"decisions-{os.getpid()}-{secrets.token_hex(4)}.duckdb"
            ((database,),) = con.sql("select current_database()").fetchall()
            con.execute(f"attach '{str(path).replace(chr(39), chr(39) * 2)}' as {ALIAS}")
            self.path = path
            con.execute("set fsync_mode = 'none'")  # a scratch file, removed after the pass: nothing to sync
            con.execute("set search_path = $path", {"path": f"{quote_ident(database)}.main,{ALIAS}.main"})
        return f"{ALIAS}.main.{quote_ident(name)}"

    def close(self, con: duckdb.DuckDBPyConnection) -> None:
        """Detach and delete the file, if one was attached (its tables go with it)."""
        if self.path is None:
            return
        path, self.path = self.path, None
        try:
            with contextlib.suppress(Exception):  # the connection may be broken: the files still go
                for (table,) in con.sql("select table_name from duckdb_tables() where database_name = $db",
                                        params={"db": ALIAS}).fetchall():
                    con.execute(f"drop table {ALIAS}.main.{quote_ident(table)}")  # no checkpoint of its rows
                con.execute("reset search_path")
                con.execute(f"detach {ALIAS}")
            with contextlib.suppress(Exception):  # whatever failed above, later files are synced again
                con.execute("reset fsync_mode")
        finally:
            for leftover in (path, path.with_name(path.name + ".wal")):
                leftover.unlink(missing_ok=True)

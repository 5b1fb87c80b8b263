# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""``semif-shadow records``: every command documented, and compact / recover / stats doing their job."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from click.testing import CliRunner

from semif_shadow.cli import main
from shadow.records.cli import records
from shadow.records.inspect import spool_stats
from shadow.records.segment_files import list_segments
from shadow.records.store import RecordStore, _lock_spool
from tests.shadow.records.harness import crashed_journal

from .factories import BASE_US, OPTIONS, outcome_row, proposal_row

if TYPE_CHECKING:
    import pytest

    from shadow.records.settings import RecordSettings


def _lines(output: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_every_records_command_has_help_with_an_example() -> None:
    """`semif-shadow records <cmd> --help` works for every command and shows an Example block."""
    runner = CliRunner()
    assert "records" in runner.invoke(main, ["--help"]).output
    for name in [None, *records.commands]:
        args = ["records", "--help"] if name is None else ["records", name, "--help"]
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
        assert "Example" in result.output
        assert "semif-shadow records" in result.output


async def test_compact_and_stats_from_the_command_line(local_settings: RecordSettings) -> None:
    """`compact` merges a partition's files into one; `stats` counts rows, files and lost rows."""
    async with RecordStore(local_settings.model_copy(update={"roll_bytes": 4096})) as store:
        for i in range(30):
            await store.accept(f"d{i}", "route", BASE_US, OPTIONS)
            await store.outcome(outcome_row(f"d{i}"))
            if i:  # d0 stays unproposed: a lost row at shutdown
                await store.proposal(proposal_row(f"d{i}"))
    runner = CliRunner()
    root = local_settings.root
    result = runner.invoke(main, ["records", "compact", "--root", root, "--min-age", "0", "--grace", "0"])
    assert result.exit_code == 0, result.output
    merged = {line["partition"]: line for line in _lines(result.stdout)}
    assert merged["proposals/decision_type=route/date=2026-11-30"]["rows"] == 30
    result = runner.invoke(main, ["records", "stats", "--root", root])
    assert result.exit_code == 0, result.output
    stats = _lines(result.stdout)[0]
    proposals = stats["proposals"]
    assert isinstance(proposals, dict)
    assert proposals["bytes"] > 0
    assert {k: v for k, v in proposals.items() if k != "bytes"} == {
        "files": 1, "hidden_files": 0, "rows": 30, "partitions": 1, "status": {"scored": 29, "lost": 1},
        "lost": {"shutdown": 1}}
    outcomes = stats["outcomes"]
    assert isinstance(outcomes, dict)
    assert (outcomes["rows"], outcomes["files"]) == (30, 1)


def test_recover_publishes_a_dead_sidecars_journal(local_settings: RecordSettings) -> None:
    """`recover` turns a crashed journal into Parquet; it refuses while a store holds the spool lock."""
    crashed_journal(local_settings)
    args = ["records", "recover", "--spool-dir", str(local_settings.spool_dir), "--root", local_settings.root,
            "--writer-id", "w1"]
    runner = CliRunner()
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    report = _lines(result.stdout)[0]
    assert (report["lost"], report["torn_records"], report["segments"]) == (2, 1, 3)
    assert list_segments(local_settings.journal_dir) == []
    held = _lock_spool(local_settings.spool_dir)  # what a running store holds
    try:
        busy = runner.invoke(main, args)
    finally:
        os.close(held)
    assert busy.exit_code == 1
    assert "another record store holds" in busy.output


def test_spool_stats_skip_files_that_go_while_they_are_listed(local_settings: RecordSettings,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`records stats --spool` on a live spool: a file published or uploaded after the listing is skipped.

    The listing here names one file that exists and one that is gone (as a running store's uploader
    deletes them); the command used to stop with FileNotFoundError.
    """
    staging = local_settings.spool_dir / "staging"
    staging.mkdir(parents=True)
    kept = staging / "w1-1.parquet"
    kept.write_bytes(b"x" * 100)
    gone = staging / "w1-2.parquet"
    monkeypatch.setattr("shadow.records.inspect.staged_files",
                        lambda _folder: [(kept, kept.name), (gone, gone.name)])
    stats = spool_stats(local_settings)
    assert (stats["staged_files"], stats["staged_bytes"]) == (1, 100)

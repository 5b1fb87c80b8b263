# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""``semif-shadow records``: compact, recover and inspect the shadow records (``docs/records.md``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from shadow.records.settings import RecordSettings


def _settings(overrides: dict[str, Any]) -> RecordSettings:
    """SHADOW_RECORDS_* settings with the given flags (``--spool-dir`` for ``spool_dir``) over them."""
    from contracts.settings import build_settings  # noqa: PLC0415  (keep --help fast)
    from shadow.records.settings import RecordSettings  # noqa: PLC0415

    flags = {field: ("--" + field.replace("_", "-"), value) for field, value in overrides.items()}
    return build_settings(RecordSettings, flags)


def _echo(payload: dict[str, Any]) -> None:
    click.echo(json.dumps(payload, sort_keys=True, default=str))


@click.group("records")
def records() -> None:
    """Durable shadow records: compaction, recovery and statistics.

    Settings come from SHADOW_RECORDS_* variables; the options override them.

    \b
    Examples:
      semif-shadow records stats --root s3://bucket/shadow
      semif-shadow records compact --root ./shadow-records --min-age 600
      semif-shadow records recover --spool-dir /var/spool/shadow --root ./shadow-records
    """


@records.command("compact")
@click.option("--root", default=None,
              help="Records root (folder or s3://bucket/prefix); default SHADOW_RECORDS_ROOT.")
@click.option("--partition", default=None, metavar="DATASET/decision_type=T/date=D",
              help="Only this partition folder (relative to the root).")
@click.option("--min-age", type=float, default=600.0, show_default=True,
              help="Merge only files at least this many seconds old.")
@click.option("--grace", type=float, default=300.0, show_default=True,
              help="Delete replaced files only once their compact file is this many seconds old.")
@click.option("--max-file-mb", type=float, default=64.0, show_default=True,
              help="Merge files smaller than this.")
def compact(root: str | None, partition: str | None, min_age: float, grace: float,
            max_file_mb: float) -> None:
    """Merge each partition's small files into one, never exposing a duplicate or a gap.

    Readers must list files through shadow.records.layout (a compact file hides the files it
    replaces). Prints one JSON line per partition. Run one compaction per root at a time.

    \b
    Example:
      semif-shadow records compact --root ./shadow-records --min-age 0 --grace 0
    """
    from shadow.records.compact import CompactPolicy, compact_root  # noqa: PLC0415
    from shadow.records.errors import RecordsError  # noqa: PLC0415
    from shadow.records.layout import filesystem  # noqa: PLC0415
    from shadow.records.s3 import S3Uploader  # noqa: PLC0415

    settings = _settings({"root": root})
    fs, base = filesystem(settings)
    policy = CompactPolicy(min_age_s=min_age, grace_s=grace, max_file_bytes=int(max_file_mb * 1024 * 1024))
    uploader = S3Uploader(settings) if settings.is_s3 else None
    try:
        done = compact_root(fs, base, policy, only=partition, uploader=uploader)
    except RecordsError as exc:
        raise click.ClickException(str(exc)) from exc
    for folder, result in done:
        _echo({"partition": folder, "merged": len(result.merged), "sources": result.sources,
               "rows": result.rows, "deleted": result.deleted})


@records.command("recover")
@click.option("--spool-dir", default=None, help="Journal folder; default SHADOW_RECORDS_SPOOL_DIR.")
@click.option("--root", default=None, help="Records root; default SHADOW_RECORDS_ROOT.")
@click.option("--writer-id", default=None,
              help="The writer whose journal this is; default SHADOW_RECORDS_WRITER_ID.")
def recover(spool_dir: str | None, root: str | None, writer_id: str | None) -> None:
    """Publish what a stopped sidecar's journal holds (and upload staged files to S3).

    Refuses to run while a sidecar holds the spool. Accepted decisions that were never proposed
    become lost/crash_recovery rows. Prints the recovery report as JSON.

    \b
    Example:
      semif-shadow records recover --spool-dir /var/spool/shadow --root s3://bucket/shadow
    """
    import asyncio  # noqa: PLC0415

    from shadow.records.errors import RecordsError  # noqa: PLC0415
    from shadow.records.store import RecordStore  # noqa: PLC0415

    settings = _settings({"spool_dir": spool_dir, "root": root, "writer_id": writer_id})

    async def run() -> dict[str, Any]:
        async with RecordStore(settings) as store:
            pass
        return {**store.stats.recovery, "uploads": store.stats.uploads,
                "staged_bytes_left": store.stats.staged_bytes}

    try:
        _echo(asyncio.run(run()))
    except RecordsError as exc:
        raise click.ClickException(str(exc)) from exc


@records.command("stats")
@click.option("--root", default=None, help="Records root; default SHADOW_RECORDS_ROOT.")
@click.option("--spool-dir", default=None, help="Also report this spool's journal and staged bytes.")
def stats(root: str | None, spool_dir: str | None) -> None:
    """Files, rows and bytes per dataset as readers see them, lost rows by reason, spool use.

    \b
    Example:
      semif-shadow records stats --root ./shadow-records --spool-dir ./shadow-spool
    """
    from shadow.records.inspect import root_stats, spool_stats  # noqa: PLC0415

    settings = _settings({"root": root, "spool_dir": spool_dir})
    _echo(root_stats(settings))
    if spool_dir is not None:
        _echo(spool_stats(settings))

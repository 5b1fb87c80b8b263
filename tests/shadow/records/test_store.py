# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""RecordStore end to end on a local root: journal, roll-over, Parquet layout, the sink's promises."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow.parquet as pq
import pytest
from aiohttp import web

from contracts.records import OUTCOMES, PROPOSALS, RECORD_VERSION
from shadow.records.errors import InvalidRow, StoreClosed
from shadow.records.layout import open_dataset
from shadow.records.segment_files import ACCEPT, list_segments, read_segment
from shadow.records.settings import RecordSettings
from shadow.records.store import RecordStore

from .factories import BASE_US, OPTIONS, outcome_row, proposal_row

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

DAY_US = 86_400_000_000


def _block_folder(folder: Path) -> Path:
    folder.parent.mkdir(parents=True)
    folder.write_text("in the way")
    return folder


def _parquet_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.parquet"))


async def test_rows_land_in_hive_partitions_with_the_exact_schema(local_settings: RecordSettings) -> None:
    """Rows go to <dataset>/decision_type=<t>/date=<d>/w1-<seq>.parquet, typed exactly as records."""
    async with RecordStore(local_settings) as store:
        await store.accept("d1", "route", BASE_US, OPTIONS)
        await store.proposal(proposal_row("d1"))
        await store.proposal(proposal_row("d2", decision_type="prio/urgent", received_at=BASE_US + DAY_US,
                                          status="dropped", reason="queue_full"))
        await store.outcome(outcome_row("d1"))
    root = Path(local_settings.root)
    relative = [p.relative_to(root).parent.as_posix() for p in _parquet_files(root)]
    assert sorted(relative) == ["outcomes/decision_type=route/date=2026-11-30",
                                "proposals/decision_type=prio%2Furgent/date=2026-12-01",
                                "proposals/decision_type=route/date=2026-11-30"]
    for path in _parquet_files(root):
        table = pq.read_table(path, partitioning=None)
        expected = PROPOSALS if "proposals" in path.parts else OUTCOMES
        assert table.schema.equals(expected, check_metadata=False)
        assert path.name.startswith("w1-")
        assert table.column("writer_id").to_pylist() == ["w1"] * table.num_rows
        assert table.column("record_version").to_pylist() == [RECORD_VERSION] * table.num_rows
    proposals = open_dataset(local_settings, "proposals").to_table().to_pylist()
    by_id = {r["decision_id"]: r for r in proposals}
    assert by_id["d2"]["decision_type"] == "prio/urgent"
    assert by_id["d2"]["reason"] == "queue_full"
    assert by_id["d1"]["received_at"] == datetime.fromtimestamp(BASE_US / 1e6, tz=UTC)
    assert by_id["d1"]["probabilities"] == [0.6, 0.3, 0.1]
    assert list_segments(local_settings.journal_dir) == []


async def test_roll_over_by_size_publishes_while_running(local_settings: RecordSettings) -> None:
    """Past roll_bytes (checked after each commit) a segment becomes Parquet while the store runs."""
    settings = local_settings.model_copy(update={"roll_bytes": 16_384})
    async with RecordStore(settings) as store:
        for i in range(200):
            await store.proposal(proposal_row(f"d{i}"))
            if i % 20 == 19:  # a durable write: a commit, after which the size check runs
                await store.outcome(outcome_row(f"d{i}"))
        for _ in range(400):
            if store.stats.segments_published >= 2:
                break
            await asyncio.sleep(0.05)
        assert store.stats.segments_published >= 2
        assert all(not p.name.startswith(".") for p in _parquet_files(Path(settings.root)))
    ids = open_dataset(settings, "proposals").to_table().column("decision_id").to_pylist()
    assert sorted(ids) == sorted(f"d{i}" for i in range(200))


async def test_roll_over_by_age(local_settings: RecordSettings) -> None:
    """A quiet segment older than roll_seconds is published without waiting for more records."""
    settings = local_settings.model_copy(update={"roll_seconds": 0.2})
    async with RecordStore(settings) as store:
        await store.outcome(outcome_row("d1"))
        for _ in range(400):
            if _parquet_files(Path(settings.root)):
                break
            await asyncio.sleep(0.05)
        assert len(_parquet_files(Path(settings.root))) == 1


async def test_pending_accepts_survive_roll_over_and_close_as_lost(local_settings: RecordSettings) -> None:
    """An accepted decision carried across roll-overs and still unproposed at close gets a lost row."""
    settings = local_settings.model_copy(update={"roll_bytes": 4096})
    async with RecordStore(settings) as store:
        await store.accept("waiting", "route", BASE_US, OPTIONS)
        for i in range(60):
            await store.proposal(proposal_row(f"d{i}"))
        await store.accept("late", "route", BASE_US, OPTIONS)
        await store.proposal(proposal_row("late"))
    rows = open_dataset(settings, "proposals").to_table().to_pylist()
    lost = [r for r in rows if r["status"] == "lost"]
    assert [(r["decision_id"], r["reason"], r["option_ids"]) for r in lost] == [
        ("waiting", "shutdown", OPTIONS)]
    assert len(rows) == 62
    assert store.stats.lost_at_shutdown == 1


async def test_each_candidate_and_decision_type_owes_its_own_row(local_settings: RecordSettings) -> None:
    """A decision accepted for two candidates needs a row from each; the same id in another type is apart.

    The champion's row completes only the champion's mark: the challenger's, and the other type's
    decision with the same id, close as ``lost`` / ``shutdown`` with their own candidate.
    """
    async with RecordStore(local_settings) as store:
        await store.accept("d1", "route", BASE_US, OPTIONS)
        await store.accept("d1", "route", BASE_US, OPTIONS, candidate="gpu_q8")
        await store.accept("d1", "prio", BASE_US, OPTIONS)
        await store.proposal(proposal_row("d1", candidate="default"))
    rows = open_dataset(local_settings, "proposals").to_table().to_pylist()
    got = sorted((r["decision_type"], r["decision_id"], r["candidate"], r["status"]) for r in rows)
    assert got == [("prio", "d1", "default", "lost"), ("route", "d1", "default", "scored"),
                   ("route", "d1", "gpu_q8", "lost")]
    assert store.stats.lost_at_shutdown == 2


async def test_invalid_rows_are_refused_naming_the_field(local_settings: RecordSettings) -> None:
    """A row the schema cannot hold is refused at the door (InvalidRow.field), never journaled."""
    async with RecordStore(local_settings) as store:
        cases: list[tuple[dict[str, Any], str]] = [
            ({"colour": "red"}, "colour"), ({"probabilities": [0.5, "x"]}, "probabilities"),
            ({"prompt_tokens": 2**40}, "prompt_tokens"), ({"sampled": "yes"}, "sampled"),
            ({"decision_id": ""}, "decision_id"),
            ({"received_at": datetime(2026, 11, 30)}, "received_at")]  # noqa: DTZ001  (naive on purpose)
        for extra, field in cases:
            with pytest.raises(InvalidRow) as info:
                await store.proposal({**proposal_row("bad"), **extra})
            assert info.value.field == field
        await store.proposal(proposal_row("good", received_at=datetime(2026, 11, 30, tzinfo=UTC)))
    ids = open_dataset(local_settings, "proposals").to_table().column("decision_id").to_pylist()
    assert ids == ["good"]


async def test_writes_after_close_are_refused(local_settings: RecordSettings) -> None:
    """A closed store raises StoreClosed instead of silently dropping a record."""
    store = RecordStore(local_settings)
    async with store:
        pass
    with pytest.raises(StoreClosed):
        await store.outcome(outcome_row("d1"))


@pytest.mark.parametrize("policy", ["group", "always", "none"])
async def test_every_fsync_policy_keeps_every_row(local_settings: RecordSettings, policy: str) -> None:
    """The fsync policy changes cost, not content: each policy writes every row exactly once."""
    settings = local_settings.model_copy(update={"fsync": policy})
    async with RecordStore(settings) as store:
        await asyncio.gather(*(store.accept(f"d{i}", "route", BASE_US, OPTIONS) for i in range(50)))
        await asyncio.gather(*(store.outcome(outcome_row(f"d{i}")) for i in range(50)))
        for i in range(50):
            await store.proposal(proposal_row(f"d{i}"))
    proposals = open_dataset(settings, "proposals").to_table().column("decision_id").to_pylist()
    outcomes = open_dataset(settings, "outcomes").to_table().column("decision_id").to_pylist()
    assert sorted(proposals) == sorted(outcomes) == sorted(f"d{i}" for i in range(50))


async def test_a_failed_publish_keeps_the_segment_and_is_retried(local_settings: RecordSettings) -> None:
    """A segment that cannot become Parquet stays in the journal and is published on a later tick.

    The obstacle here is a file where a folder must go; the error is counted meanwhile.
    """
    settings = local_settings.model_copy(update={"roll_seconds": 0.1})
    obstacle = _block_folder(Path(settings.root) / "outcomes")
    async with RecordStore(settings) as store:
        await store.outcome(outcome_row("d1"))
        for _ in range(400):
            if store.stats.publish_errors:
                break
            await asyncio.sleep(0.05)
        assert store.stats.publish_errors >= 1
        assert len(list_segments(settings.journal_dir)) >= 2  # the sealed one waits, a new one is open
        obstacle.unlink()
        for _ in range(400):
            if store.stats.segments_published:
                break
            await asyncio.sleep(0.05)
        assert store.stats.segments_published >= 1
    assert open_dataset(settings, "outcomes").to_table().column("decision_id").to_pylist() == ["d1"]


async def test_a_proposal_racing_a_seal_keeps_its_decision_carried(local_settings: RecordSettings) -> None:
    """A proposal racing a roll-over: its decision's accept is carried into the new segment.

    The proposal arrives while the seal flushes the old segment, so it lands in the new one; until it
    is on disk, only the carried accept stands for the decision (without it a crash would lose it).
    Found by the SIGKILL test (1 run in ~10).
    """
    async with RecordStore(local_settings) as store:
        await store.accept("x", "route", BASE_US, OPTIONS)
        journal = store._journal
        assert journal is not None
        await store.proposal(proposal_row("y"))  # something for the seal's flush to write
        seal = asyncio.create_task(store._roll(journal))
        await asyncio.sleep(0)  # the seal task swaps the buffer and waits for its fsync
        await store.proposal(proposal_row("x"))  # buffered for the new segment, not yet on disk
        await seal
        fresh = read_segment(journal.segment.path)  # what a SIGKILL now would leave
        carried = [orjson.loads(body)["decision_id"] for kind, body in fresh.frames if kind == ACCEPT]
        assert carried == ["x"]
    proposals = open_dataset(local_settings, "proposals").to_table().to_pylist()
    assert sorted((r["decision_id"], r["status"]) for r in proposals) == [("x", "scored"), ("y", "scored")]


FULL_DISK_STORE = """
import asyncio, json, resource, signal, sys
from pathlib import Path
from shadow.records.errors import RecordsError
from shadow.records.settings import RecordSettings
from shadow.records.store import RecordStore
from tests.shadow.records.factories import BASE_US, OPTIONS, outcome_row, proposal_row

async def main(tmp):
    settings = RecordSettings(root=f"{tmp}/root", spool_dir=Path(tmp) / "spool", writer_id="w1")
    accepted, failed = [], None
    async with RecordStore(settings) as store:
        resource.setrlimit(resource.RLIMIT_FSIZE, (30_000, resource.RLIM_INFINITY))  # the disk fills
        for i in range(10_000):
            try:
                await store.accept(f"d{i}", "route", BASE_US, OPTIONS)
            except RecordsError:
                failed = f"d{i}"
                break
            accepted.append(f"d{i}")
            await store.proposal(proposal_row(f"d{i}"))
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        await store.outcome(outcome_row("d0"))  # space again: the next commit retries what failed
    print(json.dumps({"accepted": accepted, "failed": failed}))

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
asyncio.run(main(sys.argv[1]))
"""


def test_a_failed_commit_is_retried_for_proposals_and_reported_to_waiters(tmp_path: Path) -> None:
    """A commit that fails on a full disk: waiters get the error, proposals are retried later.

    The disk is a real RLIMIT_FSIZE in a child process. The accept waiting on the failed commit gets
    the error; the proposals in it are written once space is back, none of them twice.
    """
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", FULL_DISK_STORE, str(tmp_path)], cwd=root,  # noqa: S603  (our script)
                          capture_output=True, text=True, check=True, timeout=120)
    result = json.loads(done.stdout)
    assert result["failed"] is not None
    assert len(result["accepted"]) > 5
    settings = RecordSettings(root=str(tmp_path / "root"), spool_dir=tmp_path / "spool", writer_id="w1")
    ids = open_dataset(settings, "proposals").to_table().column("decision_id").to_pylist()
    assert sorted(ids) == sorted(result["accepted"])


async def test_accept_refuses_what_a_lost_row_could_not_hold(local_settings: RecordSettings) -> None:
    """Accept validates its arguments, so recovery never meets a mark it cannot turn into a row."""
    async with RecordStore(local_settings) as store:
        for args, field in [(("", "route", BASE_US, OPTIONS), "decision_id"),
                            (("d1", "route", BASE_US, ["a", 2]), "option_ids"),
                            (("d1", "route", "yesterday", OPTIONS), "received_at")]:
            with pytest.raises(InvalidRow) as info:
                await store.accept(*args)  # type: ignore[arg-type]
            assert info.value.field == field
        assert store.stats.accepted == 0


async def test_a_row_larger_than_a_parse_block_is_kept(local_settings: RecordSettings) -> None:
    """A 3 MB stored state (beyond the 1 MiB JSON parse block) still becomes one intact row."""
    big = "x" * 3_000_000
    async with RecordStore(local_settings) as store:
        await store.proposal(proposal_row("small"))
        await store.proposal(proposal_row("big", state=big))
    rows = {r["decision_id"]: r for r in open_dataset(local_settings, "proposals").to_table().to_pylist()}
    assert rows["big"]["state"] == big
    assert rows["small"]["state"] is None


RECORDS = web.AppKey("records", RecordStore)


def _app(settings: RecordSettings) -> web.Application:
    async def records_ctx(app: web.Application) -> AsyncIterator[None]:
        async with RecordStore(settings) as store:
            app[RECORDS] = store
            yield

    async def post_outcome(request: web.Request) -> web.Response:
        await request.app[RECORDS].outcome(await request.json())
        return web.json_response({"durable": True})

    app = web.Application()
    app.cleanup_ctx.append(records_ctx)
    app.router.add_post("/outcomes", post_outcome)
    return app


async def test_the_store_lives_in_an_aiohttp_cleanup_ctx(local_settings: RecordSettings,
                                                         aiohttp_client: Any) -> None:
    """Opened and closed by cleanup_ctx around a real server: acknowledged outcomes are in Parquet."""
    client = await aiohttp_client(_app(local_settings))
    for i in range(5):
        resp = await client.post("/outcomes", json=outcome_row(f"d{i}"))
        assert resp.status == 200
    await client.close()  # runs the cleanup: flush, roll over
    ids = open_dataset(local_settings, "outcomes").to_table().column("decision_id").to_pylist()
    assert sorted(ids) == [f"d{i}" for i in range(5)]

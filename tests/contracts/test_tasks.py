"""`stop_tasks`: every task given is cancelled, then awaited; its own cancellation ends quietly."""

from __future__ import annotations

import asyncio

import pytest

from contracts.tasks import stop_tasks


async def test_running_tasks_are_cancelled_and_finished() -> None:
    """Two loops that never end are both cancelled and have both finished (their cleanup ran) on return."""
    cleaned: list[str] = []

    async def loop(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append(name)

    tasks = [asyncio.create_task(loop(name)) for name in ("a", "b")]
    await asyncio.sleep(0)
    await stop_tasks(*tasks, None)
    assert sorted(cleaned) == ["a", "b"]
    assert all(task.cancelled() for task in tasks)


async def test_a_task_that_failed_raises_its_error() -> None:
    """A task that already ended with an error is not hidden: awaiting it raises that error."""
    async def broken() -> None:
        raise ValueError("broken")

    task = asyncio.create_task(broken())
    await asyncio.sleep(0)
    with pytest.raises(ValueError, match="broken"):
        await stop_tasks(task)

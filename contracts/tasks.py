"""Stopping a task: cancel it and wait until it has finished (every owner of a long-lived task does this).

    await stop_tasks(writer)           # one task
    await stop_tasks(*workers)         # all cancelled first, then each awaited
    await stop_tasks(maybe_started)    # None is skipped: a task that was never started

The task's own `asyncio.CancelledError` ends quietly; any other exception it ended with is raised here,
as awaiting it would. Used by both services and the relay process (stdlib only).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def stop_tasks(*tasks: asyncio.Future[Any] | None) -> None:
    """Cancel every task given (None skipped), then await each until it has finished."""
    started = [task for task in tasks if task is not None]
    for task in started:
        task.cancel()
    for task in started:
        with contextlib.suppress(asyncio.CancelledError):
            await task

"""Run a connection's tasks until the first one finishes, then cancel the rest with a reason."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


async def until_first(why: str, *coros: Coroutine[Any, Any, None]) -> None:
    async with asyncio.TaskGroup() as tg:
        finished = asyncio.Event()
        tasks = [tg.create_task(c) for c in coros]
        for t in tasks:
            t.add_done_callback(lambda _t: finished.set())
        await finished.wait()
        for t in tasks:
            if not t.done():
                t.cancel(why)

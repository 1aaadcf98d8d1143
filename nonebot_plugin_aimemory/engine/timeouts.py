"""`within`: `asyncio.wait_for` without its task on the Pythons that allow it.

Before Python 3.12 `wait_for` wraps what it awaits in a new task, a few event-loop passes
on every call; a turn makes several such waits (each stage of the model call, the reply's
delivery). `asyncio.timeout` (3.11+) bounds the wait with a timer on the caller's own task.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """`await awaitable`, raising TimeoutError after `seconds` (and cancelling it)."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)

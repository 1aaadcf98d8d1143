"""Group members' names, looked up through the OneBot API and cached for a while (an @
costs at most one API call)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable
from typing import Any

from nonebot.adapters.onebot.v11 import Bot

logger = logging.getLogger("nonebot_plugin_aimemory")

API_TIMEOUT_SECONDS = 5.0
MEMBER_NAME_TTL_SECONDS = 600.0
MEMBER_CACHE_SIZE = 4096
# A failed lookup may be a passing API error: retry it sooner than a known name.
MEMBER_MISS_TTL_SECONDS = 60.0


class MemberNames:
    """Group card / nickname lookups, cached for a while (an @ costs at most one API call)."""

    def __init__(self) -> None:
        self._cache: OrderedDict[tuple[int, int], tuple[float, str | None]] = OrderedDict()

    async def name(self, bot: Bot, group_id: int, user_id: int) -> str | None:
        """Card or nickname; None when the user is not a member (or the lookup failed)."""
        key = (group_id, user_id)
        cached = self._cache.get(key)
        if cached is not None:
            ttl = MEMBER_NAME_TTL_SECONDS if cached[1] is not None else MEMBER_MISS_TTL_SECONDS
            if time.monotonic() - cached[0] < ttl:
                return cached[1]
        info = await call_quietly(bot.get_group_member_info(group_id=group_id, user_id=user_id))
        name = None
        if isinstance(info, dict):
            name = str(info.get("card") or info.get("nickname") or user_id)
        self._cache[key] = (time.monotonic(), name)
        self._cache.move_to_end(key)
        while len(self._cache) > MEMBER_CACHE_SIZE:
            self._cache.popitem(last=False)
        return name


async def call_quietly(request: Awaitable[Any]) -> Any:
    """An API call that may fail or hang: None instead of an exception."""
    try:
        return await asyncio.wait_for(request, API_TIMEOUT_SECONDS)
    except Exception as exc:
        logger.info("OneBot API call failed: %r", exc)
        return None

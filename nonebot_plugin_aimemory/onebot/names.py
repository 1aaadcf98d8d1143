"""Names of chats for the web panel: group names and friend nicknames, fetched through a
connected bot's `get_group_list` / `get_friend_list` in the background and cached. A read
never waits for the API: an unknown chat answers None (the panel shows its key) and starts
a refresh, at most one at a time and one per `REFRESH_SECONDS`."""

from __future__ import annotations

import asyncio
import logging
import time

import nonebot
from nonebot.adapters.onebot.v11 import Bot

from ..scopes import Scope
from .members import call_quietly

logger = logging.getLogger("nonebot_plugin_aimemory")

# How long a fetched list is trusted before a miss may fetch it again.
REFRESH_SECONDS = 300.0


class ChatNames:
    """`g:<群号>` → group name, `f:<QQ号>` → friend nickname, from what the bots report."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._fetched_at = float("-inf")
        self._refreshing: asyncio.Task[None] | None = None

    def name(self, chat_key: str) -> str | None:
        """The chat's name if known; an unknown one starts a refresh (never awaited here)."""
        found = self._names.get(chat_key)
        scope = Scope.parse_or_none(chat_key)
        if found is None and scope is not None and not scope.is_personal:
            self.refresh_soon()
        return found

    def refresh_soon(self) -> None:
        """Fetch the lists in the background unless done recently or under way."""
        if time.monotonic() - self._fetched_at < REFRESH_SECONDS:
            return
        if self._refreshing is not None and not self._refreshing.done():
            return
        try:
            self._refreshing = asyncio.get_running_loop().create_task(self.refresh())
        except RuntimeError:
            return  # no loop (a synchronous caller): the next read in the loop fetches

    async def refresh(self) -> None:
        """Ask every connected OneBot v11 bot for its groups and friends (each call bounded
        by members.API_TIMEOUT_SECONDS; failures leave what was known)."""
        self._fetched_at = time.monotonic()
        for bot in list(nonebot.get_bots().values()):
            if not isinstance(bot, Bot):
                continue
            groups = await call_quietly(bot.get_group_list())
            for group in groups if isinstance(groups, list) else []:
                if isinstance(group, dict) and group.get("group_id") and group.get("group_name"):
                    self._names[str(Scope.group(group["group_id"]))] = str(group["group_name"])
            friends = await call_quietly(bot.get_friend_list())
            for friend in friends if isinstance(friends, list) else []:
                if isinstance(friend, dict) and friend.get("user_id"):
                    shown = friend.get("remark") or friend.get("nickname")
                    if shown:
                        self._names[str(Scope.friend(friend["user_id"]))] = str(shown)
        logger.debug("panel knows %d chat names", len(self._names))

    async def close(self) -> None:
        """Stop a refresh under way (at shutdown)."""
        if self._refreshing is not None and not self._refreshing.done():
            self._refreshing.cancel()
            await asyncio.gather(self._refreshing, return_exceptions=True)

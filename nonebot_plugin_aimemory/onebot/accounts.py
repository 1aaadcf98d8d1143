"""The bot accounts: which OneBot v11 accounts are connected to this NoneBot, which of them
the plugin answers as (`aimemory_accounts`), and the home account, whose keys stay bare
(`g:123`, not `g:123@10001`: scopes.py). The home account is the first one that spoke to
the plugin on this database, recorded once; an install that ran with one account keeps
every window, persona choice, counter and usage row for it after an upgrade, and an
account added later starts with empty windows of its own."""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

import nonebot
from nonebot.adapters.onebot.v11 import Bot

logger = logging.getLogger("nonebot_plugin_aimemory")

HOME_ACCOUNT = "home_account"


class StateStore(Protocol):
    """Facts set once (store/plugin_state.py)."""

    async def get(self, name: str) -> str | None:
        """The value of `name`, or None."""
        ...

    async def set_once(self, name: str, value: str) -> str:
        """Set `name` unless it is set; the value it holds afterwards."""
        ...


class Accounts:
    """The accounts the plugin knows of, and how each one's keys are written."""

    def __init__(self, state: StateStore, served: frozenset[str] = frozenset()) -> None:
        self.state = state
        self.served = served
        self.home: str | None = None
        self._claiming = asyncio.Lock()

    async def load(self) -> None:
        """Read the home account. A database with none gets the first account connected
        already, if any: started after its accounts connected (a deferred start, a
        restart), the plugin never hears their connections, and the first message to come
        in is any account's."""
        self.home = await self.state.get(HOME_ACCOUNT)
        if self.home is None:
            served = [account for account in self._connected_in_order() if self.serves(account)]
            if served:
                await self.key_account(served[0])

    def serves(self, account: str) -> bool:
        """Whether the plugin answers as `account`."""
        return not self.served or account in self.served

    def connected(self) -> frozenset[str]:
        """Every OneBot v11 account connected to this NoneBot now."""
        return frozenset(self._connected_in_order())

    def _connected_in_order(self) -> list[str]:
        """The connected OneBot v11 accounts, the first to connect first (NoneBot keeps
        its bots in the order they connected)."""
        return [self_id for self_id, bot in nonebot.get_bots().items() if isinstance(bot, Bot)]

    def peers(self, connected: frozenset[str]) -> frozenset[str]:
        """Of the `connected` accounts, those the plugin answers as."""
        return frozenset(account for account in connected if self.serves(account))

    async def key_account(self, account: str) -> str | None:
        """What `account`'s keys carry: None for the home account (claimed by the first
        account that asks, and written before anything is stored under it)."""
        if self.home is None:
            async with self._claiming:
                if self.home is None:
                    try:
                        self.home = await self.state.set_once(HOME_ACCOUNT, account)
                    except Exception:
                        # The database failing: the message is still answered (as the home
                        # account's), and the next one tries again.
                        logger.exception("could not record the home bot account")
                        return None
                    logger.info("bot account %s keeps the keys of this database", self.home)
        return None if account == self.home else account

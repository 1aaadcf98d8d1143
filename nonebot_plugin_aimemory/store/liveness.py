"""A running bot says so in its database (`plugin_state.running`: which process, since
when, renewed every minute, removed at a clean stop), so a tool that must not write under
a live bot (the migration to PostgreSQL) can tell one is there."""

from __future__ import annotations

import logging
import os
import socket
from datetime import datetime, timedelta, timezone
from typing import Protocol

from ..engine import Background
from .times import UTC_TEXT_FORMAT, utc_now_text

logger = logging.getLogger("nonebot_plugin_aimemory")

RUNNING = "running"
RENEW_SECONDS = 60.0
# A mark this old is a bot that died without stopping: not taken as running.
STALE_AFTER = timedelta(seconds=RENEW_SECONDS * 3)


class StateStore(Protocol):
    """Facts about the plugin (store/plugin_state.py)."""

    async def get(self, name: str) -> str | None:
        """The value of `name`, or None."""
        ...

    async def put(self, name: str, value: str) -> None:
        """Set `name`."""
        ...

    async def forget(self, name: str) -> None:
        """Unset `name`."""
        ...

    @property
    def for_one_process(self) -> bool:
        """Whether the database is meant for one bot process."""
        ...


def this_process() -> str:
    """`<pid>@<host>`: which process holds the database."""
    return f"{os.getpid()}@{socket.gethostname()}"


async def mark_running(state: StateStore) -> None:
    """Say (again) that this process runs on the database."""
    await state.put(RUNNING, f"{this_process()} {utc_now_text()}")


async def unmark_running(state: StateStore) -> None:
    """A clean stop: no bot runs on the database any more."""
    await state.forget(RUNNING)


async def running_bot(state: StateStore, now: datetime | None = None) -> str | None:
    """Which process runs on the database (`<pid>@<host> (seen <UTC time>)`), or None when
    none has said so within STALE_AFTER."""
    found = await running_process(state, RUNNING, now)
    if found is None:
        return None
    process, _, at = found.rpartition(" ")
    return f"{process} (seen {at})"


async def running_process(state: StateStore, name: str, now: datetime | None = None) -> str | None:
    """The fresh mark `name` (`<pid>@<host> <UTC time>`), or None (absent or stale)."""
    mark = await state.get(name)
    if not mark:
        return None
    process, _, at = mark.rpartition(" ")
    try:
        seen = datetime.strptime(at, UTC_TEXT_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    if (now or datetime.now(timezone.utc)) - seen > STALE_AFTER:
        return None
    return f"{process} {at}"


def account_mark(account: str) -> str:
    """The name of the mark of the process serving `account`."""
    return f"account:{account}"


class RunningMark:
    """This process's marks in its database (None: no database), renewed every minute
    while the bot runs and removed when it stops: that a bot runs, and which process serves
    each account. Two processes serving one account (on one PostgreSQL database) answer
    each message once between them (message_claims.py), but each keeps its own copy of the
    account's windows: the second one logs it, once."""

    def __init__(self, state: StateStore | None) -> None:
        self.state = state
        self.accounts: set[str] = set()
        self._warned: set[str] = set()
        self._looked = False
        self._background = Background("running mark")

    def start(self) -> None:
        """Mark now, and again every RENEW_SECONDS."""
        if self.state is not None:
            self._background.every(RENEW_SECONDS, self.renew, first_delay_seconds=0, name="mark")

    def serve(self, account: str) -> None:
        """This process answers as `account` from now on (marked with the next renewal)."""
        if self.state is not None and account not in self.accounts:
            self.accounts.add(account)
            self._background.spawn(self._mark_account(account), name="account mark")

    async def renew(self) -> None:
        """Every mark again (the first time, after a look for another bot on the file)."""
        if self.state is None:
            return
        if not self._looked:
            self._looked = True
            await self._warn_of_another_bot(self.state)
        await mark_running(self.state)
        for account in sorted(self.accounts):
            await self._mark_account(account)

    async def _warn_of_another_bot(self, state: StateStore) -> None:
        """Two bots started by one system user share the plugin's data folder, so one file:
        say so at start-up rather than let them mix their memories silently."""
        other = await running_bot(state)
        if other is None or other.startswith(f"{this_process()} ") or not state.for_one_process:
            return
        logger.warning(
            "另一个机器人进程（%s）也在用这个数据库文件：两个机器人会共用、互相改写记忆和聊天"
            "记录。每个机器人请用自己的数据文件：在各自的 .env 里设置不同的 AIMEMORY_DB_PATH，"
            "或 LOCALSTORE_USE_CWD=true 让数据放在各自的目录里",
            other,
        )

    async def _mark_account(self, account: str) -> None:
        assert self.state is not None
        mark = account_mark(account)
        other = await running_process(self.state, mark)
        elsewhere = other is not None and not other.startswith(f"{this_process()} ")
        if elsewhere and account not in self._warned:
            self._warned.add(account)
            logger.warning(
                "bot account %s is also served by another process (%s) on this database: "
                "their windows of its chats drift apart; run each account in one process only",
                account,
                other,
            )
        await self.state.put(mark, f"{this_process()} {utc_now_text()}")

    async def close(self) -> None:
        """Stop renewing and remove the marks (a failure is logged: they go stale)."""
        await self._background.close()
        if self.state is None:
            return
        try:
            for account in sorted(self.accounts):
                await self.state.forget(account_mark(account))
            await unmark_running(self.state)
        except Exception:
            logger.exception("could not remove the running marks")

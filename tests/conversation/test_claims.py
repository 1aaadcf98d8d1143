"""Which copy of a message does what (conversation/claims.py): in one process's memory when
there is no database, and through the database's claims when there is one — two
`MessageClaims` on one SQLite file standing for two bot processes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.fakes.content import Said

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.conversation.claims import MessageClaims
    from nonebot_plugin_aimemory.conversation.incoming import Incoming
    from nonebot_plugin_aimemory.store.sqlite.database import Database

LOWER, HIGHER = "42", "43"
PEERS = frozenset({LOWER, HIGHER})
SENT = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
# Short, so the tests are quick; the plugin waits LOWER_ACCOUNT_WAIT_SECONDS.
WAIT_SECONDS = 0.5


class Clock:
    """A clock the test sets (for this process's memory of who is in which group)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def nickname_call(account: str, message_id: str, *, peers: frozenset[str] = PEERS) -> Incoming:
    """ "小忆 在吗" in group 777 as `account` received it."""
    from nonebot_plugin_aimemory.conversation.incoming import Incoming, Speaker

    return Incoming(
        key="g:777" if account == LOWER else f"g:777@{account}",
        group_id="777",
        speaker=Speaker("2001", "小明"),
        sent_at=SENT,
        addressed=True,
        content=Said("在吗"),
        account=account,
        peers=peers,
        fingerprint="小忆 在吗",
        message_id=message_id,
        names_no_account=True,
    )


def chat_line(account: str, message_id: str) -> Incoming:
    """ "大家好" in group 777, for nobody, as `account` received it."""
    from dataclasses import replace

    call = nickname_call(account, message_id)
    return replace(call, addressed=False, fingerprint="大家好", names_no_account=False)


def in_memory() -> MessageClaims:
    from nonebot_plugin_aimemory.conversation.claims import MessageClaims

    return MessageClaims(wait_seconds=WAIT_SECONDS)


async def answered(claims: MessageClaims, incoming: Incoming) -> bool:
    matched = await claims.match(incoming, log_ambient=False)
    assert matched is not None
    return matched.addressed


async def test_without_a_database_a_call_only_the_lower_account_got_is_answered_at_once() -> None:
    claims = in_memory()
    await claims.match(chat_line(HIGHER, "9001"), log_ambient=False)
    loop = asyncio.get_running_loop()
    started = loop.time()

    assert await answered(claims, nickname_call(LOWER, "2"))
    assert loop.time() - started < WAIT_SECONDS


async def test_without_a_database_a_call_only_the_higher_one_got_is_answered_after_a_wait() -> None:
    claims = in_memory()
    await claims.match(chat_line(LOWER, "1"), log_ambient=False)  # the lower one is here
    loop = asyncio.get_running_loop()
    started = loop.time()

    assert await answered(claims, nickname_call(HIGHER, "9002"))
    assert loop.time() - started >= WAIT_SECONDS
    # The lower account's copy, if it comes after all, finds it answered.
    assert not await answered(claims, nickname_call(LOWER, "2"))


async def test_without_a_database_the_lower_accounts_copy_during_the_wait_is_answered() -> None:
    claims = in_memory()
    await claims.match(chat_line(LOWER, "1"), log_ambient=False)

    higher = asyncio.create_task(answered(claims, nickname_call(HIGHER, "9002")))
    await asyncio.sleep(WAIT_SECONDS / 5)
    lower = await answered(claims, nickname_call(LOWER, "2"))

    assert (lower, await higher) == (True, False)


@pytest.fixture
async def two_processes(tmp_path: Path) -> AsyncIterator[tuple[MessageClaims, MessageClaims]]:
    """The claims of two bot processes on one SQLite file, each with one account."""
    from nonebot_plugin_aimemory.conversation.claims import MessageClaims
    from nonebot_plugin_aimemory.store.message_claims import MessageClaimStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    databases: list[Database] = [await Database.open(tmp_path / "aimemory.db") for _ in range(2)]
    processes = [
        MessageClaims(MessageClaimStore(database), wait_seconds=WAIT_SECONDS)
        for database in databases
    ]
    yield processes[0], processes[1]
    for claims, database in zip(processes, databases, strict=True):
        await claims.close()
        await database.close()


async def test_two_processes_answer_a_call_once_and_log_it_once(
    two_processes: tuple[MessageClaims, MessageClaims],
) -> None:
    lower, higher = two_processes
    await lower.match(chat_line(LOWER, "1"), log_ambient=False)

    by_higher, by_lower = await asyncio.gather(
        higher.match(nickname_call(HIGHER, "9002", peers=frozenset({HIGHER})), log_ambient=False),
        lower.match(nickname_call(LOWER, "2", peers=frozenset({LOWER})), log_ambient=False),
    )

    assert by_higher is not None
    assert by_lower is not None
    assert (by_lower.addressed, by_higher.addressed) == (True, False)
    assert by_lower.received is not None
    assert by_lower.received.loggable


async def test_a_copy_another_process_took_is_dropped(
    two_processes: tuple[MessageClaims, MessageClaims],
) -> None:
    first, second = two_processes
    call = nickname_call(LOWER, "2", peers=frozenset({LOWER}))

    assert await first.match(call, log_ambient=False) is not None
    assert await second.match(call, log_ambient=False) is None


@pytest.fixture
async def one_process(tmp_path: Path) -> AsyncIterator[MessageClaims]:
    """The claims of one bot process with both accounts, on a SQLite file."""
    from nonebot_plugin_aimemory.conversation.claims import MessageClaims
    from nonebot_plugin_aimemory.store.message_claims import MessageClaimStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    database = await Database.open(tmp_path / "aimemory.db")
    claims = MessageClaims(MessageClaimStore(database), wait_seconds=WAIT_SECONDS)
    yield claims
    await claims.close()
    await database.close()


async def test_a_call_the_higher_account_got_first_in_a_quiet_group_is_the_lowers(
    one_process: MessageClaims,
) -> None:
    # The first message of a group heard by nobody lately: presence says nothing yet, and
    # the two connections deliver their copies in any order.
    higher = asyncio.create_task(answered(one_process, nickname_call(HIGHER, "9002")))
    await asyncio.sleep(WAIT_SECONDS / 5)
    lower = await answered(one_process, nickname_call(LOWER, "2"))

    assert (lower, await higher) == (True, False)


async def test_a_copy_counts_here_before_its_presence_reaches_the_database(
    tmp_path: Path,
) -> None:
    from nonebot_plugin_aimemory.conversation.claims import MessageClaims
    from nonebot_plugin_aimemory.store.message_claims import MessageClaimStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    class SlowPresence(MessageClaimStore):
        """A database whose presence notes come late (a busy PostgreSQL pool)."""

        async def note_present(self, chat: str, account: str) -> None:
            await asyncio.sleep(WAIT_SECONDS * 4)

    database = await Database.open(tmp_path / "aimemory.db")
    claims = MessageClaims(SlowPresence(database), wait_seconds=WAIT_SECONDS)
    clock = Clock()
    claims.memory.clock = clock
    noting = asyncio.create_task(claims.match(chat_line(LOWER, "1"), log_ambient=False))
    await asyncio.sleep(0)  # the lower account's line reached this process
    clock.now = 3.0  # and the group has been heard for longer than a copy takes
    loop = asyncio.get_running_loop()
    started = loop.time()

    assert await answered(claims, nickname_call(HIGHER, "9002"))
    assert loop.time() - started >= WAIT_SECONDS  # it waited for the lower account
    noting.cancel()
    await claims.close()
    await database.close()


async def test_a_burst_of_chat_lines_notes_the_accounts_presence_once(tmp_path: Path) -> None:
    from nonebot_plugin_aimemory.conversation.claims import MessageClaims
    from nonebot_plugin_aimemory.store.message_claims import MessageClaimStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    class CountedPresence(MessageClaimStore):
        """A database that counts the presence notes it is asked to write."""

        notes = 0

        async def note_present(self, chat: str, account: str) -> None:
            self.notes += 1
            await super().note_present(chat, account)

    database = await Database.open(tmp_path / "aimemory.db")
    store = CountedPresence(database)
    claims = MessageClaims(store, wait_seconds=WAIT_SECONDS)

    # Given a group's chat lines all arriving before the first note is written,
    await asyncio.gather(
        *(claims.match(chat_line(LOWER, str(n)), log_ambient=False) for n in range(50))
    )

    # then the account's presence is written once, not once a line.
    assert store.notes == 1
    await claims.close()
    await database.close()


async def test_a_presence_note_that_failed_is_tried_again_by_the_next_line(
    tmp_path: Path,
) -> None:
    from nonebot_plugin_aimemory.conversation.claims import MessageClaims
    from nonebot_plugin_aimemory.store.message_claims import MessageClaimStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    class FailingOnce(MessageClaimStore):
        """A database whose first presence note fails (a locked file)."""

        notes = 0

        async def note_present(self, chat: str, account: str) -> None:
            self.notes += 1
            if self.notes == 1:
                raise OSError("database is locked")
            await super().note_present(chat, account)

    database = await Database.open(tmp_path / "aimemory.db")
    store = FailingOnce(database)
    claims = MessageClaims(store, wait_seconds=WAIT_SECONDS)

    await claims.match(chat_line(LOWER, "1"), log_ambient=False)
    await claims.match(chat_line(LOWER, "2"), log_ambient=False)

    assert store.notes == 2
    await claims.close()
    await database.close()

"""Claims on received messages (store/message_claims.py) made through two connections to
one database, as two bot processes make them, on both backends: copies of one message meet
whichever process takes them, one account answers a message that names none, one process
logs it, a process's very copy taken again is a duplicate, and the claims of a process
that stopped renewing them expire."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.backend import Backend
    from nonebot_plugin_aimemory.store.connection import Connection
    from nonebot_plugin_aimemory.store.message_claims import (
        Claim,
        ClaimRequest,
        MessageClaimStore,
    )
    from tests.store.conftest import Opener

CHAT = "g:777"
LOWER, HIGHER = "42", "43"


@pytest.fixture
async def two_databases(open_backend: Opener) -> AsyncIterator[tuple[Backend, Backend]]:
    """Two connections to the test's database, one per process."""
    first, second = await open_backend(), await open_backend()
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


@pytest.fixture
def stores(two_databases: tuple[Backend, Backend]) -> tuple[MessageClaimStore, MessageClaimStore]:
    """The claims of two processes: the first serves LOWER, the second HIGHER."""
    from nonebot_plugin_aimemory.store.message_claims import MessageClaimStore

    return (
        MessageClaimStore(two_databases[0], "first"),
        MessageClaimStore(two_databases[1], "second"),
    )


def copy(
    account: str,
    message_id: str,
    words: str = "小忆 在吗",
    *,
    for_the_bot: bool = True,
    sent_at: float | None = None,
) -> ClaimRequest:
    """A member's nickname call (or, not `for_the_bot`, a chat line) as `account` got it."""
    from nonebot_plugin_aimemory.store.message_claims import ClaimRequest, said_digest

    return ClaimRequest(
        chat=CHAT,
        sender="2001",
        said=said_digest(words),
        sent_at=time.time() if sent_at is None else sent_at,
        account=account,
        message_id=message_id,
        for_the_bot=for_the_bot,
        names_no_account=True,
        log_if_answering=True,
        log_otherwise=True,
        in_group=True,
        peers=frozenset({account}),
    )


async def claim(
    store: MessageClaimStore,
    request: ClaimRequest,
    *,
    waited: bool = False,
    message: int | None = None,
) -> Claim:
    from nonebot_plugin_aimemory.conversation.copies import takes_the_answer

    return await store.claim(
        request,
        lambda present: takes_the_answer(request.account, present, waited=waited),
        message,
    )


async def test_the_lowest_account_present_answers_whichever_copy_comes_first(
    stores: tuple[MessageClaimStore, MessageClaimStore],
) -> None:
    lower, higher = stores
    await lower.note_present(CHAT, LOWER)
    sent_at = time.time()
    higher_copy = copy(HIGHER, "9001", sent_at=sent_at)

    waiting = await claim(higher, higher_copy)
    answered = await claim(lower, copy(LOWER, "1", sent_at=sent_at))
    asked_again = await claim(higher, higher_copy, message=waiting.message)

    assert waiting.answers is None  # the lower account is in the group: it may claim it
    assert (answered.message, answered.answers, answered.logs) == (waiting.message, True, True)
    assert (asked_again.answers, asked_again.logs) == (False, False)  # logged by the other


async def test_a_higher_account_answers_after_its_wait(
    stores: tuple[MessageClaimStore, MessageClaimStore],
) -> None:
    lower, higher = stores
    await lower.note_present(CHAT, LOWER)
    sent_at = time.time()
    higher_copy = copy(HIGHER, "9001", sent_at=sent_at)

    waiting = await claim(higher, higher_copy)
    waited = await claim(higher, higher_copy, waited=True, message=waiting.message)
    late = await claim(lower, copy(LOWER, "1", sent_at=sent_at))

    assert (waited.answers, waited.logs) == (True, True)
    assert (late.message, late.answers) == (waiting.message, False)


async def test_the_same_copy_taken_by_a_second_process_is_a_duplicate(
    stores: tuple[MessageClaimStore, MessageClaimStore],
) -> None:
    first, second = stores
    sent_at = time.time()

    taken = await claim(first, copy(LOWER, "7", sent_at=sent_at))
    again = await claim(second, copy(LOWER, "7", sent_at=sent_at))

    assert taken.answers is True
    assert again.duplicate
    assert again.message == taken.message


async def test_the_same_words_said_twice_are_two_messages(
    stores: tuple[MessageClaimStore, MessageClaimStore],
) -> None:
    first, second = stores
    sent_at = time.time()
    said = {"words": "哈哈", "for_the_bot": False, "sent_at": sent_at}

    once = await claim(first, copy(LOWER, "1", **said))
    twice = await claim(first, copy(LOWER, "2", **said))
    # The other account's copies, in the order they came, go with each message in turn.
    once_elsewhere = await claim(second, copy(HIGHER, "9001", **said))
    twice_elsewhere = await claim(second, copy(HIGHER, "9002", **said))

    assert once.message != twice.message
    assert (once_elsewhere.message, twice_elsewhere.message) == (once.message, twice.message)
    # Each is logged once: by the process that logged it first.
    assert [c.logs for c in (once, twice, once_elsewhere, twice_elsewhere)] == [
        True,
        True,
        False,
        False,
    ]


async def test_copies_claimed_at_once_by_two_processes_meet(
    stores: tuple[MessageClaimStore, MessageClaimStore],
) -> None:
    lower, higher = stores
    await lower.note_present(CHAT, LOWER)
    sent_at = time.time()
    messages = [f"第{n}句" for n in range(20)]

    claims = await asyncio.gather(
        *(
            claim(lower, copy(LOWER, str(n), words, sent_at=sent_at))
            for n, words in enumerate(messages)
        ),
        *(
            claim(higher, copy(HIGHER, str(9000 + n), words, sent_at=sent_at), waited=True)
            for n, words in enumerate(messages)
        ),
    )

    by_lower, by_higher = claims[:20], claims[20:]
    assert [c.message for c in by_lower] == [c.message for c in by_higher]
    # Each message answered by exactly one account, and logged by exactly one process.
    assert all(a.answers != b.answers for a, b in zip(by_lower, by_higher, strict=True))
    assert all(a.logs != b.logs for a, b in zip(by_lower, by_higher, strict=True))


async def test_the_claims_of_a_process_that_stopped_renewing_them_expire(
    stores: tuple[MessageClaimStore, MessageClaimStore], two_databases: tuple[Backend, Backend]
) -> None:
    from nonebot_plugin_aimemory.store.message_claims import HOLDER_EXPIRY_SECONDS

    dead, alive = stores
    sent_at = time.time()
    taken = await claim(dead, copy(LOWER, "7", sent_at=sent_at))
    # The first process says nothing for longer than the expiry (it was killed).
    await two_databases[0].write_one(
        "UPDATE claim_holders SET alive_at = alive_at - ? WHERE process = 'first'",
        (HOLDER_EXPIRY_SECONDS + 1,),
    )

    again = await claim(alive, copy(LOWER, "7", sent_at=sent_at))

    assert taken.answers is True
    assert (again.duplicate, again.message, again.answers, again.logs) == (
        False,
        taken.message,
        True,
        True,
    )


async def test_a_process_that_stopped_is_not_waited_for(
    stores: tuple[MessageClaimStore, MessageClaimStore],
) -> None:
    lower, higher = stores
    await lower.note_present(CHAT, LOWER)
    await lower.release()  # a clean stop

    answered = await claim(higher, copy(HIGHER, "9001"))

    assert answered.answers is True


async def test_claims_and_presence_are_pruned_when_old(
    stores: tuple[MessageClaimStore, MessageClaimStore], two_databases: tuple[Backend, Backend]
) -> None:
    from nonebot_plugin_aimemory.store.message_claims import CLAIMS_KEPT_SECONDS

    old, recent = stores
    database = two_databases[0]
    await claim(old, copy(LOWER, "1"))
    await claim(recent, copy(HIGHER, "9001", "另一句"))
    long_ago = CLAIMS_KEPT_SECONDS + 1

    def age_the_first_process(connection: Connection) -> None:
        for sql in (
            "UPDATE message_claims SET claimed_at = claimed_at - ? WHERE id IN "
            "(SELECT message FROM message_copies WHERE process = ?)",
            "UPDATE chat_presence SET seen_at = seen_at - ? WHERE process = ?",
            "UPDATE claim_holders SET alive_at = alive_at - ? WHERE process = ?",
        ):
            connection.execute(sql, (long_ago, "first"))

    await database.write(age_the_first_process)

    await recent.prune()

    counts = {
        table: (await database.read(f"SELECT COUNT(*) FROM {table}"))[0][0]
        for table in ("message_claims", "message_copies", "chat_presence", "claim_holders")
    }
    assert counts == {
        "message_claims": 1,
        "message_copies": 1,
        "chat_presence": 1,
        "claim_holders": 1,
    }

"""The records of where the bot's messages went: keyed by bot account and message id in
one form whatever shape the id came in, the newest send of a reused id wins, removed with
the chat log's retention; without a database a bounded memory of the newest."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.sent_messages import SentMessage
    from nonebot_plugin_aimemory.store.sqlite.database import Database

ACCOUNT = "42"
OTHER_ACCOUNT = "43"
OLD = "2026-11-01T00:00:00.000000Z"
CUTOFF = "2026-11-15T00:00:00.000000Z"
NEW = "2026-11-30T00:00:00.000000Z"


def sent(message_id: str, chat_key: str, at: str = NEW, account: str = ACCOUNT) -> SentMessage:
    from nonebot_plugin_aimemory.store.sent_messages import SentMessage

    return SentMessage(account, message_id, chat_key, at)


@pytest.fixture
def database(any_database: Database) -> Database:
    return any_database


@pytest.mark.parametrize(
    ("value", "key"),
    [
        (123, "123"),
        ("123", "123"),
        (" 0123 ", "123"),
        (-2147480000, "-2147480000"),
        ("msg-abc", "msg-abc"),
        (None, None),
        ("", None),
        ("  ", None),
        (True, None),
        (1.5, None),
        ({"message_id": 1}, None),
    ],
)
def test_a_message_id_has_one_stored_form(value: object, key: str | None) -> None:
    from nonebot_plugin_aimemory.store.sent_messages import message_key

    assert message_key(value) == key


async def test_a_record_is_found_by_its_account_and_id_only(database) -> None:
    from nonebot_plugin_aimemory.store.sent_messages import SentMessageStore

    store = SentMessageStore(database)
    await store.record([sent("1", "g:111"), sent("2", "f:3001")])

    assert await store.chat_of(ACCOUNT, "1") == "g:111"
    assert await store.chat_of(ACCOUNT, "2") == "f:3001"
    # Another bot account numbers its messages on its own.
    assert await store.chat_of(OTHER_ACCOUNT, "1") is None
    assert await store.chat_of(ACCOUNT, "3") is None


async def test_the_newest_send_of_a_reused_id_owns_it(database) -> None:
    from nonebot_plugin_aimemory.store.sent_messages import SentMessageStore

    store = SentMessageStore(database)
    await store.record([sent("1", "g:111", OLD)])
    await store.record([sent("1", "g:222", NEW)])

    assert await store.chat_of(ACCOUNT, "1") == "g:222"


async def test_nothing_to_record_writes_nothing(database) -> None:
    from nonebot_plugin_aimemory.store.sent_messages import SentMessageStore

    await SentMessageStore(database).record([])

    assert await database.read("SELECT COUNT(*) FROM sent_messages") == [(0,)]


# The chat log's search index is SQLite's FTS5 so far: its retention runs on SQLite only.
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_the_chat_logs_retention_removes_older_records_in_its_transaction(
    database,
) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.sent_messages import SentMessageStore

    store = SentMessageStore(database)
    await store.record([sent("1", "g:111", OLD), sent("2", "g:111", NEW)])

    await ChatLogStore(database).delete_older_than(CUTOFF)

    assert await store.chat_of(ACCOUNT, "1") is None
    assert await store.chat_of(ACCOUNT, "2") == "g:111"


async def test_records_outlive_closing_the_database(tmp_path) -> None:
    from nonebot_plugin_aimemory.store.sent_messages import SentMessageStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    first = await Database.open(tmp_path / "sent.db")
    await SentMessageStore(first).record([sent("1", "g:111")])
    await first.close()

    reopened = await Database.open(tmp_path / "sent.db")
    try:
        assert await SentMessageStore(reopened).chat_of(ACCOUNT, "1") == "g:111"
    finally:
        await reopened.close()


async def test_without_a_database_the_newest_records_are_remembered() -> None:
    from nonebot_plugin_aimemory.store.sent_messages import MemoryOnlySentMessages

    memory = MemoryOnlySentMessages(max_records=2)
    await memory.record([sent("1", "g:111"), sent("2", "g:111")])
    await memory.record([sent("1", "g:222"), sent("3", "f:3001")])

    assert await memory.chat_of(ACCOUNT, "1") == "g:222"
    assert await memory.chat_of(ACCOUNT, "2") is None  # the oldest, forgotten
    assert await memory.chat_of(ACCOUNT, "3") == "f:3001"
    assert await memory.chat_of(OTHER_ACCOUNT, "3") is None

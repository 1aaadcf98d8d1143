"""Which chat each message the bot sent went to, by the id its OneBot implementation gave
it, so a quote of the bot's own message is shown only in that chat. Kept as long as the
chat log keeps its rows (removed in the same retention transaction)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .backend import Backend
from .connection import Connection

# Without a database: the newest sends remembered, so a long run cannot grow without end.
MAX_REMEMBERED_IN_MEMORY = 10_000


@dataclass(frozen=True, slots=True)
class SentMessage:
    """One message the bot sent: the bot account that sent it (its QQ number), the id its
    implementation answered with, the key of the chat it went to, and when (UTC text)."""

    account: str
    message_id: str
    chat_key: str
    sent_at: str


def message_key(value: object) -> str | None:
    """A message id as it is stored and looked up: `123`, `"123"` and `" 0123 "` are one
    id; a non-numeric id (some implementations) is kept as text; None for no id."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        return str(int(text))
    except ValueError:
        return text


class SentMessages(Protocol):
    """Where the records of sent messages are kept."""

    async def record(self, sent: Sequence[SentMessage]) -> None:
        """Keep these records (a newer record of the same id replaces the older one)."""
        ...

    async def chat_of(self, account: str, message_id: str) -> str | None:
        """The key of the chat `account` sent `message_id` to, or None if unrecorded."""
        ...


class SentMessageStore:
    """SQL for `sent_messages`."""

    def __init__(self, database: Backend) -> None:
        self.database = database

    async def record(self, sent: Sequence[SentMessage]) -> None:
        """Keep these records in one transaction: one trip for every message of a reply."""
        if not sent:
            return
        values = [(s.account, s.message_id, s.chat_key, s.sent_at) for s in sent]

        def work(connection: Connection) -> None:
            # An implementation may reuse an id after a while: the newest send owns it.
            connection.executemany(
                "INSERT INTO sent_messages (account, message_id, chat_key, sent_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (account, message_id) DO UPDATE SET "
                "chat_key = excluded.chat_key, sent_at = excluded.sent_at",
                values,
            )

        await self.database.write(work)

    async def chat_of(self, account: str, message_id: str) -> str | None:
        """The key of the chat `account` sent `message_id` to, or None if unrecorded."""
        rows = await self.database.read(
            "SELECT chat_key FROM sent_messages WHERE account = ? AND message_id = ?",
            (account, message_id),
        )
        return str(rows[0][0]) if rows else None


def forget_sent_before(connection: Connection, cutoff: str) -> None:
    """Delete the records of messages sent before `cutoff` (fixed-width UTC text), in the
    caller's transaction (the chat log's retention)."""
    connection.execute("DELETE FROM sent_messages WHERE sent_at < ?", (cutoff,))


class MemoryOnlySentMessages:
    """No database: the newest MAX_REMEMBERED_IN_MEMORY records, lost at a restart."""

    def __init__(self, max_records: int = MAX_REMEMBERED_IN_MEMORY) -> None:
        self.max_records = max_records
        self._chats: OrderedDict[tuple[str, str], str] = OrderedDict()

    async def record(self, sent: Sequence[SentMessage]) -> None:
        """Remember these records, forgetting the oldest beyond the limit."""
        for message in sent:
            key = (message.account, message.message_id)
            self._chats.pop(key, None)
            self._chats[key] = message.chat_key
        while len(self._chats) > self.max_records:
            self._chats.popitem(last=False)

    async def chat_of(self, account: str, message_id: str) -> str | None:
        """The key of the chat `account` sent `message_id` to, or None if unremembered."""
        return self._chats.get((account, message_id))

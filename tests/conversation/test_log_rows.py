"""Which copy of a message several accounts of one process received is logged
(conversation/log_rows.py): the one answered here, as one account alone would log it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from tests.fakes.content import Said

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.conversation.copies import ReceivedMessage
    from nonebot_plugin_aimemory.conversation.incoming import Incoming
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow

SENT = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


@dataclass
class Queue:
    """The chat log's queue; `flush` writes what is queued."""

    queued: list[ChatRow] = field(default_factory=list)
    written: list[ChatRow] = field(default_factory=list)

    def add(self, row: ChatRow, *, review: bool = False, review_for: str | None = None) -> None:
        self.queued.append(row)

    def mark_refused(self, row: ChatRow) -> None:
        pass

    def replace(self, queued: ChatRow, row: ChatRow) -> bool:
        for index, waiting in enumerate(self.queued):
            if waiting is queued:
                self.queued[index] = row
                return True
        return False

    def flush(self) -> None:
        self.written += self.queued
        self.queued = []

    def texts(self) -> list[str]:
        return [row.text for row in self.written + self.queued]


def message() -> ReceivedMessage:
    from nonebot_plugin_aimemory.conversation.copies import ReceivedMessage

    return ReceivedMessage("2001", 0, SENT.timestamp(), {"42", "43"})


def copies(received: ReceivedMessage) -> tuple[Incoming, Incoming]:
    """`@42 带伞了吗`: 42's copy, addressed and answered here, and 43's, where the @ of
    another account is text."""
    from nonebot_plugin_aimemory.conversation.incoming import Incoming, Speaker

    addressed = Incoming(
        key="g:777",
        group_id="777",
        speaker=Speaker("2001", "小明"),
        sent_at=SENT,
        addressed=True,
        content=Said("带伞了吗"),
        account="42",
        peers=frozenset({"42", "43"}),
        fingerprint="@42带伞了吗",
        message_id="1",
        received=received,
    )
    plain = replace(
        addressed, key="g:777@43", addressed=False, content=Said("@42 带伞了吗"), account="43"
    )
    return addressed, plain


def log_plain(queue: Queue, incoming: Incoming) -> bool:
    from nonebot_plugin_aimemory.conversation.log_rows import log_user_once, user_row

    return log_user_once(queue, incoming, user_row(incoming, "@42 带伞了吗", addressed=False))


def log_read_in_full(queue: Queue, incoming: Incoming) -> bool:
    from nonebot_plugin_aimemory.conversation.log_rows import log_user_once, user_row

    return log_user_once(queue, incoming, user_row(incoming, "带伞了吗（全文）"))


def test_a_plain_copy_logged_first_gives_way_to_the_answered_one_at_once() -> None:
    from nonebot_plugin_aimemory.conversation.log_rows import read_here

    queue = Queue()
    addressed, plain = copies(message())
    assert log_plain(queue, plain)

    read_here(queue, addressed)
    queue.flush()  # before the answered copy's turn reads it in full

    assert not log_read_in_full(queue, addressed)
    assert queue.texts() == ["带伞了吗"]


def test_the_answered_copys_full_reading_replaces_its_plain_one_while_queued() -> None:
    from nonebot_plugin_aimemory.conversation.log_rows import read_here

    queue = Queue()
    addressed, plain = copies(message())
    log_plain(queue, plain)
    read_here(queue, addressed)

    assert log_read_in_full(queue, addressed)
    assert queue.texts() == ["带伞了吗（全文）"]


def test_a_plain_copy_after_the_answered_one_is_not_logged() -> None:
    from nonebot_plugin_aimemory.conversation.log_rows import read_here

    queue = Queue()
    addressed, plain = copies(message())
    read_here(queue, addressed)

    assert not log_plain(queue, plain)
    queue.flush()
    assert log_read_in_full(queue, addressed)
    assert queue.texts() == ["带伞了吗（全文）"]


def test_a_copy_nobody_answers_here_is_logged_by_the_first() -> None:
    queue = Queue()
    _, plain = copies(message())
    other = replace(plain, account="44", key="g:777@44")

    assert log_plain(queue, plain)
    assert not log_plain(queue, other)
    assert queue.texts() == ["@42 带伞了吗"]


def test_a_message_another_process_logs_is_not_logged_here() -> None:
    from nonebot_plugin_aimemory.conversation.log_rows import read_here

    queue = Queue()
    received = message()
    received.loggable = False
    addressed, _ = copies(received)
    read_here(queue, addressed)

    assert not log_read_in_full(queue, addressed)
    assert queue.texts() == []

"""The chat-log rows of a conversation: what a person said, what the bot answered. A chat has
one log, whichever bot account heard or spoke (the account is kept with the bot's lines).

A message several accounts of this process received is logged once: by the copy answered
here, read in full in its turn, as one account alone would log it; the other copies read
an @ of the answering account as text. The plain row of another copy gives way to it while
still queued, and is not queued at all once a copy is answered here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..store import ChatRow, utc_now_text, utc_text
from .incoming import Incoming, parts_text


class ChatLogSink(Protocol):
    """Where the objective chat log is written (batched; never awaits), and the earlier
    lines recalled for a message are read from."""

    def add(self, row: ChatRow, *, review: bool = False, review_for: str | None = None) -> None:
        """Queue one row; `review` marks its session for a memory review, `review_for`
        the scope named instead."""
        ...

    def mark_refused(self, row: ChatRow) -> None:
        """Mark a row added earlier as refused by the model service."""
        ...

    def replace(self, queued: ChatRow, row: ChatRow) -> bool:
        """Put `row` in place of `queued` if that is still waiting to be written."""
        ...

    async def recalled(
        self, session_key: str, query: str, seen: Sequence[str], *, asker: str = ""
    ) -> str:
        """The quoted block of earlier lines answering `query` ('' for none), leaving out
        the lines the model reads anyway (`seen`: the message and the window's); `asker`
        is the name its speaker goes by, whom its "我" means."""
        ...


def user_row(incoming: Incoming, text: str, *, addressed: bool = True) -> ChatRow:
    """A person's message as a chat-log row."""
    return ChatRow(
        session_key=incoming.log_key,
        created_at=utc_text(incoming.sent_at),
        role="user",
        text=text,
        speaker_id=incoming.speaker.user_id,
        speaker_name=incoming.speaker.name,
        addressed=addressed,
    )


def assistant_row(answered: Incoming, reply: str) -> ChatRow:
    """The chat-log row of what the bot said, in answer to `answered`: in the chat's one
    log, with the account that spoke."""
    return ChatRow(
        session_key=answered.log_key,
        created_at=utc_now_text(),
        role="assistant",
        text=reply,
        speaker_id=answered.account or None,
    )


def log_user_once(chat_log: ChatLogSink, incoming: Incoming, row: ChatRow) -> bool:
    """Queue a person's message once for all the copies this process received (an
    addressed row over a plain one still queued, the answered copy's fuller reading over
    its own); whether this row is the one logged."""
    received = incoming.received
    if received is None:
        chat_log.add(row)
        return True
    if not received.loggable:
        return False  # another bot process writes it
    logged = received.logged_row
    if logged is None:
        if not row.addressed and received.read_by not in (None, incoming.account):
            return False  # the copy answered here logs it in its turn
        chat_log.add(row)
    elif not (
        row.addressed
        and (not logged.addressed or received.logged_by == incoming.account)
        and chat_log.replace(logged, row)
    ):
        return False
    received.logged_row, received.logged_by = row, incoming.account
    return True


def read_here(chat_log: ChatLogSink, incoming: Incoming) -> None:
    """The copy is answered here, and its turn logs the message: the other copies log
    nothing from now on, and a plain row one of them queued gives way to this copy's now
    (a flush may come before its turn reads it in full)."""
    received = incoming.received
    if received is None or not received.loggable:
        return
    if received.read_by is None:
        received.read_by = incoming.account
    logged = received.logged_row
    if logged is not None and not logged.addressed:
        text = parts_text(incoming.content.plain())
        if text:
            log_user_once(chat_log, incoming, user_row(incoming, text))

"""The same group message received through several bot accounts. Implementations number
messages per account, so one message can arrive with different ids: copies are told by
the chat, the sender, what was said (`fingerprint`, read the same by every account) and
when QQ says it was sent. A message is logged once (log_rows.py says by which copy), and
answered at most once when no account is named in it (the shared nickname, a command):
by the lowest account present in the group; one that has not got it yet is waited for,
at most LOWER_ACCOUNT_WAIT_SECONDS, and then the account that has it answers. This is
one process's memory of them; with a database, the claims there decide instead, by the
same rule (claims.py, store/message_claims.py), and this memory adds what only this
process knows: its accounts' copies that reached it a moment ago."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from ..store import PRESENT_SECONDS, SAME_MESSAGE_SECONDS, ChatRow

# Recent messages remembered per chat (a copy arrives seconds after the first), and chats:
# some 10 MB at most.
MESSAGES_PER_CHAT = 32
CHATS_REMEMBERED = 2048
# How long a copy of a message naming no account waits for a lower account present in the
# group to claim it: copies through several accounts come within a second of each other,
# and one that never comes (that account missed the message) must not leave it unanswered.
LOWER_ACCOUNT_WAIT_SECONDS = 2.0


def takes_the_answer(account: str, present: Collection[str], *, waited: bool) -> bool | None:
    """Whether `account` answers a message that names no account and that nobody claimed:
    yes when it is the lowest account `present` in the chat, or after it `waited` for the
    lower ones; None (ask again) while a lower one may still claim it."""
    if waited or min([*present, account], key=_as_number) == account:
        return True
    return None


@dataclass(eq=False)
class ReceivedMessage:
    """One group message and the accounts it reached."""

    sender: str
    fingerprint: int  # the hash of what was said: this process only compares them
    sent_at: float
    receivers: set[str] = field(default_factory=set)
    answered_by: str | None = None
    # The account whose copy is answered here: its turn logs the message, read in full.
    read_by: str | None = None
    # The one chat-log row of it, once a copy was logged, and the account of that copy.
    logged_row: ChatRow | None = None
    logged_by: str | None = None
    # False when another bot process on the database writes that row.
    loggable: bool = True


class ReceivedCopies:
    """The recent group messages of each chat, and which accounts are present where."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._chats: OrderedDict[str, deque[ReceivedMessage]] = OrderedDict()
        self._present: OrderedDict[tuple[str, str], float] = OrderedDict()
        # Each chat's current stretch of copies received here: (first, last) clock time.
        self._heard: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def receive(
        self, chat: str, sender: str, fingerprint: str, sent_at: float, account: str
    ) -> ReceivedMessage:
        """The message `account` received: an earlier copy another account received, or a
        new one. The same person saying the same thing twice is two messages: a copy is
        matched only to a message this account has not received yet."""
        self.note_present(chat, account)
        recent = self._recent(chat)
        said = hash(fingerprint)
        for message in recent:
            if (
                account not in message.receivers
                and message.sender == sender
                and message.fingerprint == said
                and abs(message.sent_at - sent_at) <= SAME_MESSAGE_SECONDS
            ):
                message.receivers.add(account)
                return message
        message = ReceivedMessage(sender, said, sent_at, {account})
        recent.append(message)
        return message

    def decide(
        self,
        message: ReceivedMessage,
        chat: str,
        account: str,
        peers: Collection[str],
        *,
        waited: bool = False,
    ) -> bool | None:
        """Whether `account` answers a message that names no account: the one that claimed
        it already, else the lowest of `peers` awaited in the chat (`account` always is),
        else, once it `waited`, `account`. None: not yet (ask again after a while)."""
        if message.answered_by is not None:
            return message.answered_by == account
        answers = takes_the_answer(account, self.awaited(chat, peers), waited=waited)
        if answers:
            message.answered_by = account
        return answers

    def _recent(self, chat: str) -> deque[ReceivedMessage]:
        recent = self._chats.get(chat)
        if recent is None:
            recent = self._chats[chat] = deque(maxlen=MESSAGES_PER_CHAT)
            if len(self._chats) > CHATS_REMEMBERED:
                self._chats.popitem(last=False)
        else:
            self._chats.move_to_end(chat)
        return recent

    def note_present(self, chat: str, account: str) -> None:
        """`account`'s copy of a message in `chat` reached this process now."""
        now = self.clock()
        key = (chat, account)
        self._present[key] = now
        self._present.move_to_end(key)
        if len(self._present) > CHATS_REMEMBERED * 2:
            self._present.popitem(last=False)
        first, last = self._heard.get(chat, (now, now))
        self._heard[chat] = (first if now - last <= PRESENT_SECONDS else now, now)
        self._heard.move_to_end(chat)
        if len(self._heard) > CHATS_REMEMBERED:
            self._heard.popitem(last=False)

    def awaited(self, chat: str, peers: Collection[str]) -> frozenset[str]:
        """Which of `peers` (this process's accounts, connected) a copy in `chat` waits
        for when they are lower: those present there lately, and all of them while the
        chat's copies have been coming for less than LOWER_ACCOUNT_WAIT_SECONDS — copies
        through several connections come in any order, so an account's absence shows only
        once the chat was heard for longer than a copy takes."""
        now = self.clock()
        first, last = self._heard.get(chat, (now, now))
        if now - first < LOWER_ACCOUNT_WAIT_SECONDS or now - last > PRESENT_SECONDS:
            return frozenset(peers)
        return frozenset(peer for peer in peers if self._is_present(chat, peer))

    def _is_present(self, chat: str, account: str) -> bool:
        seen = self._present.get((chat, account))
        return seen is not None and self.clock() - seen <= PRESENT_SECONDS


def _as_number(account: str) -> tuple[int, str]:
    return (int(account) if account.isdigit() else 0, account)

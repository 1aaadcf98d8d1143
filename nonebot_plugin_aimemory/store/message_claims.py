"""Claims on received messages, shared by every bot process on one database, so that a
message is answered once and logged once whichever processes and accounts receive it.

A message is one row of `message_claims`, told by its chat, sender, what was said (a
digest) and when QQ says it was sent; each account's copy of it is a row of
`message_copies`, with the id that account's implementation gave it and the process that
took it. A copy is matched to a message this account has no copy of yet, so the same
words said twice are two messages; the same copy delivered to two processes (one account
connected to both) carries the same id, and the second is a duplicate. A message that
names no account is answered by the account that claims it (`answered_by`); its chat-log
row is written by the process that claims that (`logged_in`).

Each claim is one transaction: SQLite's BEGIN IMMEDIATE makes it the file's only writer,
and on PostgreSQL it first takes an advisory lock on the message's identity, so two
processes' copies meet instead of making two messages. A process says it is alive in
`claim_holders` (renewed every HOLDER_RENEW_SECONDS and with each claim); the claims,
copies and presence of one not heard from for HOLDER_EXPIRY_SECONDS (it died) no longer
count, and rows older than CLAIMS_KEPT_SECONDS are pruned. Times are the database's
clock on PostgreSQL (processes on several machines), this machine's on SQLite."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from .backend import Backend
from .connection import Connection
from .liveness import this_process

# Copies of one message carry the same send time; this much apart are two messages.
SAME_MESSAGE_SECONDS = 60.0
# An account that received one of a group's messages this recently is taken to be in it.
PRESENT_SECONDS = 600.0
# A live process says so this often; one silent for HOLDER_EXPIRY_SECONDS has died.
HOLDER_RENEW_SECONDS = 3.0
HOLDER_EXPIRY_SECONDS = 10.0
# Claims and presence older than this are deleted (a copy comes seconds after the first).
CLAIMS_KEPT_SECONDS = 600.0
# PostgreSQL's advisory locks on message identities (two-key space, job_locks.py's too).
CLAIM_LOCK_CLASS = 0x636C6D  # "clm"

# Whether the account answers a message that names no account and that no live process
# claimed, given the accounts present in the chat (itself among them): None to ask again.
Decide = Callable[[frozenset[str]], bool | None]


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """One copy an account received, and what its process would do with it."""

    chat: str
    sender: str
    said: str  # a digest of what was said, the same in every process (`said_digest`)
    sent_at: float  # when QQ says it was sent, epoch seconds
    account: str
    message_id: str  # the id this account's implementation gave it ("": unknown)
    for_the_bot: bool  # addressed, or a command
    names_no_account: bool  # then one account answers for all
    log_if_answering: bool
    log_otherwise: bool
    in_group: bool  # the account is then present in the chat
    peers: frozenset[str] = frozenset()  # this process's accounts connected now


@dataclass(frozen=True, slots=True)
class Claim:
    """What a copy's process does with it. `answers` None: not decided yet (a lower account
    present may claim it; ask again with `message`); `logs` None: not asked."""

    message: int
    duplicate: bool = False
    answers: bool | None = False
    logs: bool | None = None


def said_digest(fingerprint: str) -> str:
    """The stored digest of what a message says."""
    return hashlib.blake2b(fingerprint.encode("utf-8", "replace"), digest_size=16).hexdigest()


def new_holder() -> str:
    """A name for this process's claims: `<pid>@<host>#<random>` (a pid comes back)."""
    return f"{this_process()}#{secrets.token_hex(4)}"


class MessageClaimStore:
    """SQL for `message_claims`, `message_copies`, `chat_presence` and `claim_holders`."""

    def __init__(self, database: Backend, holder: str | None = None) -> None:
        self.database = database
        self.holder = holder or new_holder()

    async def claim(
        self, request: ClaimRequest, decide: Decide, message: int | None = None
    ) -> Claim:
        """Match the copy to its message (unless `message`, asking again) and claim what
        its process does with it, in one transaction."""

        def work(connection: Connection) -> Claim:
            now = self.database.now_seconds(connection)
            self.database.lock(connection, CLAIM_LOCK_CLASS, identity_key(request))
            live = self._renewed(connection, now)
            if request.in_group:
                note_present(connection, request.chat, request.account, self.holder, now)
            found = message
            if found is None:
                found, duplicate = self._matched(connection, request, live, now)
                if duplicate:
                    return Claim(found, duplicate=True)
            return self._decided(connection, request, decide, found, live, now)

        return await self.database.write(work)

    async def note_present(self, chat: str, account: str) -> None:
        """`account` received a message in `chat` (no claim needed)."""

        def work(connection: Connection) -> None:
            now = self.database.now_seconds(connection)
            self._renewed(connection, now)
            note_present(connection, chat, account, self.holder, now)

        await self.database.write(work)

    async def renew(self) -> None:
        """Say again that this process is alive."""
        await self.database.write(
            lambda connection: self._renewed(connection, self.database.now_seconds(connection))
        )

    async def release(self) -> None:
        """A clean stop: this process's claims no longer count."""
        await self.database.write_one("DELETE FROM claim_holders WHERE process = ?", (self.holder,))

    async def prune(self) -> None:
        """Delete claims, copies, presence and holders older than CLAIMS_KEPT_SECONDS."""

        def work(connection: Connection) -> None:
            before = self.database.now_seconds(connection) - CLAIMS_KEPT_SECONDS
            # In the order a claim writes the tables, so the two never wait for each other.
            connection.execute("DELETE FROM claim_holders WHERE alive_at < ?", (before,))
            connection.execute("DELETE FROM chat_presence WHERE seen_at < ?", (before,))
            connection.execute(
                "DELETE FROM message_copies WHERE message IN "
                "(SELECT id FROM message_claims WHERE claimed_at < ?)",
                (before,),
            )
            connection.execute("DELETE FROM message_claims WHERE claimed_at < ?", (before,))

        await self.database.write(work)

    def _renewed(self, connection: Connection, now: float) -> frozenset[str]:
        """This process marked alive at `now`; every live process (this one among them)."""
        connection.execute(
            "INSERT INTO claim_holders (process, alive_at) VALUES (?, ?) "
            "ON CONFLICT (process) DO UPDATE SET alive_at = excluded.alive_at",
            (self.holder, now),
        )
        rows = connection.execute(
            "SELECT process FROM claim_holders WHERE alive_at >= ?",
            (now - HOLDER_EXPIRY_SECONDS,),
        ).fetchall()
        return frozenset(str(process) for (process,) in rows) | {self.holder}

    def _matched(
        self, connection: Connection, request: ClaimRequest, live: frozenset[str], now: float
    ) -> tuple[int, bool]:
        """The message the copy belongs to (a new one if none), and whether the copy is a
        duplicate: this very copy, taken by a live process. One taken by a dead process
        is taken over."""
        candidates = connection.execute(
            "SELECT m.id, c.message_id, c.process FROM message_claims m "
            "LEFT JOIN message_copies c ON c.message = m.id AND c.account = ? "
            "WHERE m.chat = ? AND m.sender = ? AND m.said = ? AND m.sent_at BETWEEN ? AND ? "
            "ORDER BY m.claimed_at, m.id",
            (
                request.account,
                request.chat,
                request.sender,
                request.said,
                request.sent_at - SAME_MESSAGE_SECONDS,
                request.sent_at + SAME_MESSAGE_SECONDS,
            ),
        ).fetchall()
        for found, message_id, holder in candidates:
            if holder is not None and request.message_id and message_id == request.message_id:
                if holder in live:
                    return int(found), True
                connection.execute(
                    "UPDATE message_copies SET process = ? WHERE message = ? AND account = ?",
                    (self.holder, found, request.account),
                )
                return int(found), False
        unmatched = [found for found, _, holder in candidates if holder is None]
        if unmatched:
            found = int(unmatched[0])
        else:
            # A random id rather than a counter: one table definition serves both databases.
            found = secrets.randbits(63)
            connection.execute(
                "INSERT INTO message_claims (id, chat, sender, said, sent_at, claimed_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (found, request.chat, request.sender, request.said, request.sent_at, now),
            )
        connection.execute(
            "INSERT INTO message_copies (message, account, message_id, process) "
            "VALUES (?, ?, ?, ?)",
            (found, request.account, request.message_id, self.holder),
        )
        return int(found), False

    def _decided(
        self,
        connection: Connection,
        request: ClaimRequest,
        decide: Decide,
        message: int,
        live: frozenset[str],
        now: float,
    ) -> Claim:
        """Whether the copy is answered here, and whether this process logs the message."""
        # The answering account's copy says which process answers: its taker's.
        answered_by, answered_in, logged_in = connection.execute(
            "SELECT m.answered_by, c.process, m.logged_in FROM message_claims m "
            "LEFT JOIN message_copies c ON c.message = m.id AND c.account = m.answered_by "
            "WHERE m.id = ?",
            (message,),
        ).fetchone()
        if not request.for_the_bot:
            answers: bool | None = False
        elif not request.names_no_account:
            answers = True  # the account it names (a duplicate never comes here)
        elif answered_in in live:
            answers = (answered_by, answered_in) == (request.account, self.holder)
        else:
            answers = decide(self._present(connection, request, live, now))
            if answers:
                connection.execute(
                    "UPDATE message_claims SET answered_by = ? WHERE id = ?",
                    (request.account, message),
                )
        if answers is None:
            return Claim(message, answers=None)
        if not (request.log_if_answering if answers else request.log_otherwise):
            return Claim(message, answers=answers)
        if logged_in not in live:
            connection.execute(
                "UPDATE message_claims SET logged_in = ? WHERE id = ?", (self.holder, message)
            )
            logged_in = self.holder
        return Claim(message, answers=answers, logs=logged_in == self.holder)

    def _present(
        self, connection: Connection, request: ClaimRequest, live: frozenset[str], now: float
    ) -> frozenset[str]:
        """The accounts present in the chat: seen there by a live process within
        PRESENT_SECONDS; of this process's own, only those connected now."""
        rows = connection.execute(
            "SELECT account, process FROM chat_presence WHERE chat = ? AND seen_at >= ?",
            (request.chat, now - PRESENT_SECONDS),
        ).fetchall()
        present = {
            str(account)
            for account, holder in rows
            if holder in live and (holder != self.holder or account in request.peers)
        }
        return frozenset(present | {request.account})


def note_present(connection: Connection, chat: str, account: str, holder: str, now: float) -> None:
    """`account` (of process `holder`) was seen in `chat` at `now`."""
    connection.execute(
        "INSERT INTO chat_presence (chat, account, process, seen_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (chat, account) DO UPDATE SET "
        "process = excluded.process, seen_at = excluded.seen_at",
        (chat, account, holder, now),
    )


def identity_key(request: ClaimRequest) -> int:
    """The lock every transaction claiming a copy of the same message waits for (a signed
    32-bit key; two messages sharing one only wait longer)."""
    identity = f"{request.chat}\n{request.sender}\n{request.said}".encode("utf-8", "replace")
    return int.from_bytes(hashlib.blake2b(identity, digest_size=4).digest(), "big", signed=True)

"""Which copy of a message does what, whichever accounts and bot processes received it:
each copy is matched to its message, a message that names no account is answered by one
account (copies.py's rule), and its chat-log row is written by one process. With a
database the claims there decide (store/message_claims.py), so several bot processes on
one database behave as one bot; without one, or while it fails, this process's memory of
recent messages does (copies.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from dataclasses import replace
from typing import Protocol

from ..engine import Background
from ..store import (
    HOLDER_RENEW_SECONDS,
    Claim,
    ClaimRequest,
    Decide,
    database_unavailable,
    said_digest,
)
from .copies import (
    CHATS_REMEMBERED,
    LOWER_ACCOUNT_WAIT_SECONDS,
    ReceivedCopies,
    ReceivedMessage,
    takes_the_answer,
)
from .incoming import Incoming

logger = logging.getLogger("nonebot_plugin_aimemory")

# How often a copy waiting for a lower account's claim asks the database again (a claim
# made in this process wakes it at once).
CLAIM_POLL_SECONDS = 0.2
# A copy nothing is done with (not for the bot, not logged) only says its account is in
# the group, at most this often per group and account.
PRESENCE_NOTE_SECONDS = 60.0
# Messages of this process remembered by their claim, for the one chat-log row of each.
MESSAGES_REMEMBERED = 4096
# How often old claims are deleted (by each process: a claim is a few rows).
PRUNE_SECONDS = 60.0


class ClaimStore(Protocol):
    """The claims on received messages in the database (store/message_claims.py)."""

    async def claim(
        self, request: ClaimRequest, decide: Decide, message: int | None = None
    ) -> Claim:
        """Match the copy to its message and claim what its process does with it."""
        ...

    async def note_present(self, chat: str, account: str) -> None:
        """`account` received a message in `chat`."""
        ...

    async def renew(self) -> None:
        """Say again that this process is alive."""
        ...

    async def release(self) -> None:
        """This process stops: its claims no longer count."""
        ...

    async def prune(self) -> None:
        """Delete old claims."""
        ...


class MessageClaims:
    """Matches each copy a bot account receives to its message, and says what this
    process does with it."""

    def __init__(
        self,
        store: ClaimStore | None = None,
        *,
        wait_seconds: float = LOWER_ACCOUNT_WAIT_SECONDS,
    ) -> None:
        self.store = store
        self.wait_seconds = wait_seconds
        self.memory = ReceivedCopies()
        self._messages: OrderedDict[int, ReceivedMessage] = OrderedDict()
        self._noted: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._changed = asyncio.Event()
        self._background = Background("message claims")
        self._renewing = False
        self._renewal_failing = False

    async def match(self, incoming: Incoming, *, log_ambient: bool) -> Incoming | None:
        """The copy as this process handles it: matched to its message (`received`), an
        ordinary chat line when another account answers it, None when another process
        took this very copy (one account connected to both)."""
        if incoming.group_id is not None:
            # Before any await: a copy that reached this process counts at once, though
            # its claim reaches the database after a higher account's.
            self.memory.note_present(incoming.log_key, incoming.account)
        if self.store is None:
            return await self._matched_in_memory(incoming)
        for_the_bot = incoming.addressed or incoming.command is not None
        try:
            if not for_the_bot and not log_ambient:
                await self._note_present(self.store, incoming)
                return incoming
            return await self._matched_in_database(self.store, incoming, log_ambient)
        except Exception as error:  # the database failing: decide as one process would
            logger.warning(
                "could not claim a message in %s: %s",
                incoming.log_key,
                error,
                exc_info=not database_unavailable(error),
            )
            return await self._matched_in_memory(incoming)

    async def close(self) -> None:
        """Stop renewing this process's claims, and give them up."""
        await self._background.close()
        if self.store is not None and self._renewing:
            try:
                await self.store.release()
            except Exception:
                logger.exception("could not give up the message claims")

    async def _matched_in_database(
        self, store: ClaimStore, incoming: Incoming, log_ambient: bool
    ) -> Incoming | None:
        self._start_renewing(store)
        request = claim_request(incoming, log_ambient=log_ambient)
        deadline = asyncio.get_running_loop().time() + self.wait_seconds
        claim = await store.claim(request, self._decider(incoming, waited=False))
        while claim.answers is None:
            await self._pause(deadline)
            waited = asyncio.get_running_loop().time() >= deadline
            claim = await store.claim(request, self._decider(incoming, waited), claim.message)
        if claim.duplicate:
            return None
        self._noted_now(incoming)
        if claim.answers:
            self._notify()
        received = self._message(claim.message, incoming)
        if claim.logs is not None:
            received.loggable = claim.logs
        return _as_answered(replace(incoming, received=received), answers=claim.answers)

    async def _matched_in_memory(self, incoming: Incoming) -> Incoming:
        """As one process with several accounts: only its own copies count."""
        if incoming.group_id is None or len(incoming.peers) <= 1:
            return incoming
        chat = incoming.log_key
        received = self.memory.receive(
            chat,
            incoming.speaker.user_id,
            incoming.fingerprint,
            incoming.sent_at.timestamp(),
            incoming.account,
        )
        self._notify()
        matched = replace(incoming, received=received)
        for_the_bot = incoming.addressed or incoming.command is not None
        if not (for_the_bot and incoming.names_no_account):
            return matched
        deadline = asyncio.get_running_loop().time() + self.wait_seconds
        waited = False
        while (
            answers := self.memory.decide(
                received, chat, incoming.account, incoming.peers, waited=waited
            )
        ) is None:
            await self._pause(deadline)
            waited = asyncio.get_running_loop().time() >= deadline
        if answers:
            self._notify()
        return _as_answered(matched, answers=answers)

    def _decider(self, incoming: Incoming, waited: bool) -> Decide:
        """The rule, on the accounts present by the database and those this process awaits
        (read now, on the event loop: the decision runs on the database's thread)."""
        account = incoming.account
        awaited = self.memory.awaited(incoming.log_key, incoming.peers)
        return lambda present: takes_the_answer(account, present | awaited, waited=waited)

    async def _pause(self, deadline: float) -> None:
        """Until a copy is matched or claimed here, a poll interval passes, or `deadline`."""
        left = deadline - asyncio.get_running_loop().time()
        changed = self._changed
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(changed.wait(), max(0.0, min(CLAIM_POLL_SECONDS, left)))

    def _notify(self) -> None:
        """Wake the copies waiting here to look again."""
        self._changed.set()
        self._changed = asyncio.Event()

    def _message(self, claim: int, incoming: Incoming) -> ReceivedMessage:
        """This process's record of the message claimed as `claim`."""
        message = self._messages.get(claim)
        if message is None:
            message = self._messages[claim] = ReceivedMessage(
                incoming.speaker.user_id, 0, incoming.sent_at.timestamp()
            )
            if len(self._messages) > MESSAGES_REMEMBERED:
                self._messages.popitem(last=False)
        message.receivers.add(incoming.account)
        return message

    async def _note_present(self, store: ClaimStore, incoming: Incoming) -> None:
        """Say the account is in the group, unless it said so lately or is saying so now."""
        if incoming.group_id is None:
            return
        key = (incoming.log_key, incoming.account)
        noted = self._noted.get(key)
        if noted is not None and asyncio.get_running_loop().time() - noted < PRESENCE_NOTE_SECONDS:
            return
        self._start_renewing(store)
        # Noted before the write: a burst's copies all arrive before it ends, and each one
        # waited on a write of its own (a fresh group's 1 000 lines: 1 000 writes, as many
        # handlers held at once, twice the time). A write that fails leaves it to the next.
        self._noted_now(incoming)
        try:
            await store.note_present(*key)
        except BaseException:
            self._noted.pop(key, None)
            raise

    def _noted_now(self, incoming: Incoming) -> None:
        if incoming.group_id is None:
            return
        key = (incoming.log_key, incoming.account)
        self._noted[key] = asyncio.get_running_loop().time()
        self._noted.move_to_end(key)
        if len(self._noted) > CHATS_REMEMBERED * 2:
            self._noted.popitem(last=False)

    def _start_renewing(self, store: ClaimStore) -> None:
        """From this process's first claim on: say it is alive, and prune old claims."""
        if self._renewing:
            return
        self._renewing = True
        self._background.every(
            HOLDER_RENEW_SECONDS, lambda: self._renew(store), name="claims renewal"
        )
        self._background.every(PRUNE_SECONDS, store.prune, name="claims pruning")

    async def _renew(self, store: ClaimStore) -> None:
        """Renew; while the database is unreachable, say so once rather than every time
        (the claims fall back to this process's memory meanwhile)."""
        try:
            await store.renew()
        except Exception as error:
            if not database_unavailable(error):
                raise
            if not self._renewal_failing:
                logger.warning("could not renew the message claims: %s", error)
            self._renewal_failing = True
        else:
            self._renewal_failing = False


def claim_request(incoming: Incoming, *, log_ambient: bool) -> ClaimRequest:
    """The claim a copy asks for: answered here when it is for the bot (by one account when
    it names none); its row logged when it is answered here (not a command) or, with
    `log_ambient`, when it is not."""
    for_the_bot = incoming.addressed or incoming.command is not None
    return ClaimRequest(
        chat=incoming.log_key,
        sender=incoming.speaker.user_id,
        said=said_digest(incoming.fingerprint),
        sent_at=incoming.sent_at.timestamp(),
        account=incoming.account,
        message_id=incoming.message_id,
        for_the_bot=for_the_bot,
        names_no_account=incoming.names_no_account,
        log_if_answering=incoming.command is None,
        log_otherwise=log_ambient,
        in_group=incoming.group_id is not None,
        peers=incoming.peers,
    )


def _as_answered(incoming: Incoming, *, answers: bool) -> Incoming:
    """The copy as answered here, or as an ordinary chat line (another account answers)."""
    return incoming if answers else incoming.ignored_here()

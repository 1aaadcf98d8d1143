"""Who waits on each model server. A member's turn goes first: background calls (the
memory reviewer, the extraction before a fold) wait while a turn's call is in flight to the
same server, and a moment after (a turn's next call follows at once). On a server of this
machine or its network, one already running when a turn's call starts is stopped and sent
again afterwards: such a server (llama.cpp, Ollama, vLLM on a small card) runs one or a few
requests at a time, so a minute-long review would make the member's answer time out
behind it. A provider's API serves many at once and bills a
stopped request's prompt all the same, so there nothing is stopped."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit

logger = logging.getLogger("nonebot_plugin_aimemory")

T = TypeVar("T")

# Roles whose calls nobody is waiting for.
BACKGROUND_ROLES = frozenset({"reviewer", "extractor"})
# Set within background work (a review, an extraction): the calls its saves make (the
# guard's check of a shared note) are waited for by nobody either.
_IN_BACKGROUND_WORK: ContextVar[bool] = ContextVar("aimemory_background_work", default=False)
# How often a background call steps aside before it runs whatever comes: in a busy group
# turns follow each other, and a review must still happen some time.
MAX_YIELDS = 3
# A member's turn calls one model after another (compression, the answer, tool rounds, the
# guard's check): the moment between two of them is no lull to start a background call in.
# In the real-model run a review's last try started right after a turn's compression, and
# the answer waited 51 s behind it on the server's one slot.
QUIET_AFTER_SECONDS = 0.5


@contextmanager
def background_work() -> Iterator[None]:
    """Mark every model call made within (in this task and those it starts) as background:
    a review's saves ask the guard's model too, and a member must not wait behind that."""
    token = _IN_BACKGROUND_WORK.set(True)
    try:
        yield
    finally:
        _IN_BACKGROUND_WORK.reset(token)


def in_background_work() -> bool:
    """Whether the current task is doing background work (see `background_work`)."""
    return _IN_BACKGROUND_WORK.get()


def is_background_call(role: str) -> bool:
    """Whether a call of `role`, made now, is one nobody waits for."""
    return role in BACKGROUND_ROLES or in_background_work()


def is_local_server(server: str) -> bool:
    """Whether `server` (as `server_of` gives it) is on this machine or a private network:
    the servers whose few slots a background call would hold."""
    host = urlsplit(server).hostname or ""
    if host == "localhost" or host.endswith((".localhost", ".local", ".lan")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name: a provider's API
    return address.is_private or address.is_loopback or address.is_link_local


def server_of(api_base: str) -> str:
    """The server an API base URL names (scheme, host and port): roles whose endpoints
    share it share its slots, whatever their paths."""
    parts = urlsplit(api_base)
    return f"{parts.scheme}://{parts.netloc}".lower()


@dataclass
class _Server:
    """One server's foreground calls in flight, and events for their coming and going:
    `quiet` once none has been for QUIET_AFTER_SECONDS."""

    in_flight: int = 0
    quiet: asyncio.Event = field(default_factory=asyncio.Event)
    busy: asyncio.Event = field(default_factory=asyncio.Event)
    _quiet_later: asyncio.TimerHandle | None = None

    def __post_init__(self) -> None:
        self.quiet.set()

    def call_started(self) -> None:
        """A foreground call is in flight."""
        self.in_flight += 1
        if self._quiet_later is not None:
            self._quiet_later.cancel()
            self._quiet_later = None
        self.quiet.clear()
        self.busy.set()

    def call_ended(self) -> None:
        """A foreground call is over; with none left, quiet after QUIET_AFTER_SECONDS."""
        self.in_flight -= 1
        if self.in_flight == 0:
            self.busy.clear()
            loop = asyncio.get_running_loop()
            self._quiet_later = loop.call_later(QUIET_AFTER_SECONDS, self.quiet.set)


class ModelTraffic:
    """The foreground calls in flight per model server, for background calls to give way
    to. One per runtime, shared by every role's client."""

    def __init__(self) -> None:
        self._servers: dict[str, _Server] = {}

    def _server(self, server: str) -> _Server:
        return self._servers.setdefault(server, _Server())

    def busy(self, server: str) -> bool:
        """Whether a foreground call is in flight to `server`."""
        return self._server(server).in_flight > 0

    @asynccontextmanager
    async def foreground(self, server: str) -> AsyncIterator[None]:
        """Mark a call someone waits for as in flight to `server` while the block runs."""
        state = self._server(server)
        state.call_started()
        try:
            yield
        finally:
            state.call_ended()

    async def background(self, server: str, call: Callable[[], Awaitable[T]], what: str) -> T:
        """Run `call` when no foreground call is in flight to `server`; on a local server,
        if one starts meanwhile, stop it and run it again once the server is quiet (at most
        MAX_YIELDS times, then it runs to the end once the server is quiet)."""
        state = self._server(server)
        if not is_local_server(server):
            await state.quiet.wait()
            return await call()
        for _ in range(MAX_YIELDS):
            await state.quiet.wait()
            task = asyncio.ensure_future(call())
            busy = asyncio.ensure_future(state.busy.wait())
            try:
                await asyncio.wait({task, busy}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                busy.cancel()
                if not task.done():
                    task.cancel()  # a member's call started, or this one was cancelled
                    await asyncio.wait({task})
            if not task.cancelled():
                return task.result()
            logger.info("%s: stepped aside for a member's turn on %s", what, server)
        # The last try runs to the end, but never starts over a member's call: on a server
        # of one slot the member would wait behind all of it.
        await state.quiet.wait()
        return await call()

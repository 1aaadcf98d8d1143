"""Who waits on each model server. A member's turn goes first: background calls (the
memory reviewer, the extraction before a fold) wait while a member's turn is under way
(from its first call to its answer stored: compression, the answer, tool rounds and the
guard's checks follow each other, and the moments between them are no lull) or another
call someone waits for is in flight to the same server. On a server of this machine or its
network, one already running when a turn starts is stopped and sent again afterwards: such
a server (llama.cpp, Ollama, vLLM on a small card) runs one or a few requests at a time,
so a minute-long review would make the member's answer time out behind it. There, too,
background calls go one at a time and start only in a lull: a call started and stopped
again is not free on such a server; after them, in the next lull, the member's conversation
is put back in the server's prompt cache (prompt_warmup.py). A provider's API serves many
at once and bills a stopped request's prompt all the same, so there nothing is stopped."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit

from .prompt_warmup import ServerCache, Warmup

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
# On a local server a background call starts only once members' turns and foreground calls
# have been over this long; a member coming first counts as a step aside. Members answer
# the bot within a second or two, and a call started in that gap and stopped half a second
# later had held the server's one slot and pushed out the prompt it had cached: in the
# real-model bench (issue #36) 90 such starts a run cost most members' calls their cached
# prompt (29 s at the median instead of 4).
LULL_SECONDS = 2.0


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


@functools.lru_cache(maxsize=64)
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


def shares_local_server(api_base: str, other_api_base: str) -> bool:
    """Whether two API bases name one server of this machine or its network: its few slots
    and cached prompts are theirs together, so a call to one pushes the other's prompt out."""
    server = server_of(api_base)
    return server == server_of(other_api_base) and is_local_server(server)


@dataclass
class _Foreground:
    """What someone waits for, in progress (a server's calls, or members' turns), and
    events for its coming and going: `busy` while any is, `quiet` while none is."""

    in_flight: int = 0
    quiet: asyncio.Event = field(default_factory=asyncio.Event)
    busy: asyncio.Event = field(default_factory=asyncio.Event)
    # When the last of it ended (monotonic seconds; never, at first).
    quiet_since: float = float("-inf")
    # Background calls to a server take turns (`ModelTraffic.background`).
    background_turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Background calls to a server not over yet (waiting, or running).
    background_pending: int = 0

    def __post_init__(self) -> None:
        self.quiet.set()

    def started(self) -> None:
        self.in_flight += 1
        self.quiet.clear()
        self.busy.set()

    def ended(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self.quiet_since = time.monotonic()
            self.busy.clear()
            self.quiet.set()

    @asynccontextmanager
    async def under_way(self) -> AsyncIterator[None]:
        self.started()
        try:
            yield
        finally:
            self.ended()


async def _all_quiet(states: tuple[_Foreground, ...]) -> None:
    """Return once none of `states` has anything in progress."""
    while not all(state.quiet.is_set() for state in states):
        for state in states:
            await state.quiet.wait()


def _quiet_for(states: tuple[_Foreground, ...]) -> float:
    """How long none of `states` has had anything in progress (0 while one has)."""
    if not all(state.quiet.is_set() for state in states):
        return 0.0
    return time.monotonic() - max(state.quiet_since for state in states)


async def _lull(states: tuple[_Foreground, ...], seconds: float) -> bool:
    """Wait for a lull: all of `states` quiet for `seconds`. False when, once all was quiet,
    something started before the lull was long enough."""
    await _all_quiet(states)
    remaining = seconds - _quiet_for(states)
    if remaining <= 0:
        return True
    busy = asyncio.ensure_future(_any_busy(states))
    done, _ = await asyncio.wait({busy}, timeout=remaining)
    busy.cancel()
    return not done


async def _any_busy(states: tuple[_Foreground, ...]) -> None:
    """Return once any of `states` has something in progress."""
    waits = [asyncio.ensure_future(state.busy.wait()) for state in states]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


class ModelTraffic:
    """Members' turns under way and the foreground calls in flight per model server, for
    background calls to give way to. One per runtime, shared by every role's client."""

    def __init__(self, lull_seconds: float = LULL_SECONDS, *, warm_up: bool = True) -> None:
        self._servers: dict[str, _Foreground] = {}
        self._turns = _Foreground()
        self.lull_seconds = lull_seconds
        # Local servers' prompt caches, filled again after background calls (`warm_up`).
        self.warm_up = warm_up
        self._caches: dict[str, ServerCache] = {}
        self._warming: dict[str, asyncio.Task[None]] = {}
        self._closed = False

    def _server(self, server: str) -> _Foreground:
        return self._servers.setdefault(server, _Foreground())

    def turn(self) -> AbstractAsyncContextManager[None]:
        """Mark a member's turn as under way while the block runs, whichever servers its
        calls go to."""
        return self._turns.under_way()

    def foreground(self, server: str) -> AbstractAsyncContextManager[None]:
        """Mark a call someone waits for as in flight to `server` while the block runs."""
        return self._server(server).under_way()

    def warms_up(self, server: str) -> bool:
        """Whether members' requests to `server` are sent again after background calls (a
        caller asks first, to build no `Warmup` for a provider)."""
        return self.warm_up and is_local_server(server)

    def answered(self, server: str, warmup: Warmup) -> None:
        """A member's request to `server` was answered (`warmup` sends it again)."""
        if self.warms_up(server):
            self._caches.setdefault(server, ServerCache()).answered(warmup)

    async def background(self, server: str, call: Callable[[], Awaitable[T]], what: str) -> T:
        """Run `call` when no member's turn is under way and no foreground call is in
        flight to `server`. On a local server, one background call at a time and only in a
        lull (`lull_seconds`); if a member's turn or call starts first, or while it runs
        (then it is stopped), it steps aside and tries again, at most MAX_YIELDS times;
        then it runs to the end once all is quiet. After the last of them, the member's
        conversation goes back into the server's cache (`_warm_in_a_lull`)."""
        state = self._server(server)
        state.background_pending += 1
        try:
            return await self._give_way(server, call, what)
        finally:
            state.background_pending -= 1
            self._cache_taken(server)

    async def close(self) -> None:
        """Stop the warm-ups under way or waiting for a lull; start no more."""
        self._closed = True
        warming = list(self._warming.values())
        for task in warming:
            task.cancel()
        await asyncio.gather(*warming, return_exceptions=True)
        self._warming.clear()

    async def _give_way(self, server: str, call: Callable[[], Awaitable[T]], what: str) -> T:
        states = (self._turns, self._server(server))
        if not is_local_server(server):
            await _all_quiet(states)
            return await call()
        for _ in range(MAX_YIELDS):
            task = await self._in_a_lull(states, call)
            if task is not None and not task.cancelled():
                return task.result()
            logger.info("%s: stepped aside for a member's turn on %s", what, server)
        # The last try runs to the end, but never starts over a member's turn: on a server
        # of one slot the member would wait behind all of it.
        async with states[1].background_turn:
            await _all_quiet(states)
            return await call()

    async def _in_a_lull(
        self,
        states: tuple[_Foreground, _Foreground],
        call: Callable[[], Awaitable[T]],
        wanted: Callable[[], bool] = lambda: True,
    ) -> asyncio.Future[T] | None:
        """Run `call` on the server alone, in a lull, stopped if a member comes first; the
        finished task, or None when the lull broke (or the call was no longer `wanted`)
        before it started."""
        # Waited for outside the lock: calls due together then run one per lull.
        if not await _lull(states, self.lull_seconds):
            return None
        async with states[1].background_turn:
            if _quiet_for(states) < self.lull_seconds or not wanted():
                return None
            return await _run_unless_busy(states, call)

    def _cache_taken(self, server: str) -> None:
        """A background call ran on `server`: warm the member's conversation up again once
        the last one is over, if it is worth it (prompt_warmup.ServerCache.due)."""
        cache = self._caches.get(server)
        if cache is None or self._closed:
            return
        cache.evicted()
        pending = self._warming.get(server)
        if cache.due() is not None and (pending is None or pending.done()):
            self._warming[server] = asyncio.ensure_future(self._warm_in_a_lull(server, cache))

    async def _warm_in_a_lull(self, server: str, cache: ServerCache) -> None:
        """In the next lull, with no background call left to come, send the member request
        the cache lost again; stopped as a background call is when a member comes first (a
        member's turn fills the cache itself)."""
        states = (self._turns, self._server(server))
        warmup = cache.due()
        if warmup is None:
            return

        def still_wanted() -> bool:
            return cache.due() is warmup and not states[1].background_pending

        task = await self._in_a_lull(states, warmup.send, still_wanted)
        if task is not None and not task.cancelled() and task.exception() is None:
            cache.warmed(warmup)


async def _run_unless_busy(
    states: tuple[_Foreground, ...], call: Callable[[], Awaitable[T]]
) -> asyncio.Future[T]:
    """Run `call`, stopped if any of `states` gets something in progress meanwhile; the
    finished task (cancelled when it was stopped, or when this was)."""
    task = asyncio.ensure_future(call())
    busy = asyncio.ensure_future(_any_busy(states))
    try:
        await asyncio.wait({task, busy}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        busy.cancel()
        if not task.done():
            task.cancel()  # a member's turn or call started, or this was cancelled
            await asyncio.wait({task})
    return task

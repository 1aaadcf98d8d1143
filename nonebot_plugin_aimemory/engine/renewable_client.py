"""The httpx client behind model calls, renewed after an exchange that broke off.

With HTTP/2 a connection outlives its calls, so a connection that misbehaved must not carry
the next one: httpx keeps a connection in its pool after the server reset a stream; and a
stream given up (at the deadline, the cap, a cancellation) is never reset by httpx, so the
server goes on generating, and billing, an answer nobody reads, whose data holds the
connection's flow-control window. Closing the connection stops both, as closing the
HTTP/1.1 connection did. httpx offers no public way to drop one pooled connection, so the
whole client is swapped: new calls get a fresh client (fresh connections), and the old one
is closed when the last call still on it ends. Such failures are rare; the price is one
handshake per host after each.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx

logger = logging.getLogger("nonebot_plugin_aimemory")


@dataclass(eq=False)
class _Generation:
    """One client and the calls still running on it."""

    client: httpx.AsyncClient
    renewable: bool
    calls: int = 0
    retired: bool = False


class RenewableClient:
    """The client `make` returns, made when first needed and again after an exchange that
    broke off; or `given`, used as it is until closed (its owner decides its connections)."""

    def __init__(
        self, make: Callable[[], httpx.AsyncClient], *, given: httpx.AsyncClient | None = None
    ) -> None:
        self._make = make
        self._current = _Generation(given, renewable=False) if given is not None else None
        self._retired: set[_Generation] = set()  # still running calls

    @property
    def current(self) -> httpx.AsyncClient:
        """The client new calls use, made now if there is none."""
        return self._current_generation().client

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[httpx.AsyncClient]:
        """The current client for one exchange; an exchange that ends in an exception (a
        timeout and a cancellation included) retires the client."""
        generation = self._current_generation()
        generation.calls += 1
        try:
            yield generation.client
        except BaseException:
            if self._retire(generation):
                logger.debug("an exchange broke off: later model calls use fresh connections")
            raise
        finally:
            generation.calls -= 1
            if generation.retired and generation.calls == 0:
                self._retired.discard(generation)
                await _close(generation.client)

    async def renew(self) -> None:
        """Send new calls to a fresh client (made when next needed); the current one closes
        once the calls still on it have ended. A given client stays."""
        generation = self._current
        if generation is None or not self._retire(generation) or generation.calls:
            return
        self._retired.discard(generation)
        await _close(generation.client)

    async def aclose(self) -> None:
        """Close every client, the current one and those retired while still in use."""
        generations = [*self._retired, *([self._current] if self._current else [])]
        self._current = None
        self._retired.clear()
        for generation in generations:
            await _close(generation.client)

    def _current_generation(self) -> _Generation:
        if self._current is None:
            self._current = _Generation(self._make(), renewable=True)
        return self._current

    def _retire(self, generation: _Generation) -> bool:
        """Send new calls to a fresh client; this one closes when its last call ends.
        Whether it was retired now (not given, not retired before)."""
        if not generation.renewable or generation.retired:
            return False
        generation.retired = True
        self._retired.add(generation)
        if self._current is generation:
            self._current = None
        return True


async def _close(client: httpx.AsyncClient) -> None:
    """Close `client`; a connection that fails to close cleanly is gone all the same."""
    try:
        await client.aclose()
    except (httpx.HTTPError, OSError) as exc:
        logger.debug("closing a model-call client: %r", exc)

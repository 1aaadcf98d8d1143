"""Who may use the panel: the operator with the token. Logging in trades the token for a
random session id kept here with an expiry (the cookie never holds the token); the JSON API
also takes the token itself as a Bearer header. Writes authorised by the cookie also need
the session's CSRF token in a header, which a page of another site cannot read or send.
Wrong tokens are counted per client (`ClientAddresses` says who that is) and for all
clients together: too many in a minute and it must wait."""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

SESSION_COOKIE = "aimemory_session"
CSRF_COOKIE = "aimemory_csrf"
CSRF_HEADER = "X-CSRF-Token"
SESSION_SECONDS = 7 * 24 * 3600
# Wrong tokens allowed per client in FAILURE_WINDOW_SECONDS, and from every client together
# (however many addresses they come from), then 429 until the oldest of them is that old.
MAX_FAILURES = 5
MAX_FAILURES_ALL_CLIENTS = 30
FAILURE_WINDOW_SECONDS = 60.0
# Sessions kept at most (oldest dropped first): logging in in a loop cannot grow memory.
MAX_SESSIONS = 256

# The one count shared by every request whose address nothing vouches for: no address, or
# one a forwarding header may have supplied. A forged header thus neither buys fresh
# attempts nor spends another client's.
UNKNOWN_CLIENT = "unknown"
# Headers a server or middleware may take the client address from. uvicorn, NoneBot's
# FastAPI server, takes X-Forwarded-For for connections from FORWARDED_ALLOW_IPS (its
# default below); the other two are looked for in case the host app reads them.
FORWARDING_HEADERS = frozenset({"x-forwarded-for", "forwarded", "x-real-ip"})
UVICORN_FORWARDED_ALLOW_IPS = "127.0.0.1,::1"
LOCALHOST = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))
# One IPv6 client holds a whole /64 (SLAAC, privacy addresses): it is counted as one.
IPV6_CLIENT_PREFIX = 64

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Clock = Callable[[], float]


@dataclass(slots=True)
class PanelSession:
    """A logged-in browser: its CSRF token and when it expires (monotonic seconds)."""

    csrf: str
    expires_at: float


class ClientAddresses:
    """Which client a request's wrong tokens count for, from what the plugin sees: the
    address the server hands it (ASGI `client`) and the headers.

    uvicorn (NoneBot's FastAPI server) puts an X-Forwarded-For entry in that address when
    the connection comes from its FORWARDED_ALLOW_IPS (127.0.0.1 and ::1 unless set), and
    no public API shows the socket's peer after that. So an address that no forwarding
    header can have supplied is the socket's peer: it counts as itself or, if it is one of
    `trusted_proxies`, as the client its X-Forwarded-For names. One that uvicorn may have
    taken from X-Forwarded-For counts as that client only when every address uvicorn
    trusts is one of `trusted_proxies`, else as UNKNOWN_CLIENT. 127.0.0.1 and ::1 (uvicorn's
    default pair) are one machine: either trusted, both are."""

    def __init__(
        self, trusted_proxies: Sequence[IPNetwork] = (), server_trusted: str | None = None
    ) -> None:
        proxies = tuple(trusted_proxies)
        if any(host in network for host in LOCALHOST for network in proxies):
            proxies += tuple(ipaddress.ip_network(host) for host in LOCALHOST)
        self._proxies = proxies
        if server_trusted is None:
            server_trusted = os.environ.get("FORWARDED_ALLOW_IPS", UVICORN_FORWARDED_ALLOW_IPS)
        self._server_trusted = _server_networks(server_trusted)
        # An address uvicorn rewrote came from one it trusts: believable only if every one
        # of those is a proxy of ours.
        self._server_rewrites_believed = bool(self._proxies) and all(
            self._trusts_network(network) for network in self._server_trusted
        )

    def client_of(self, peer: str | None, headers: Iterable[tuple[str, str]]) -> str:
        """The key `peer` (the request's ASGI client host) and the request's headers (name,
        value pairs) are counted under."""
        entries: list[str] = []
        others: list[str] = []
        for name, value in headers:
            name = name.lower()
            if name == "x-forwarded-for":
                entries.extend(entry.strip() for entry in value.split(","))
            elif name in FORWARDING_HEADERS:
                others.append(value.lower())
        if not peer:
            return UNKNOWN_CLIENT
        address = _address(peer)
        if self._maybe_rewritten(peer, address, entries):
            if self._server_rewrites_believed:
                return self._forwarded_client(entries, UNKNOWN_CLIENT)
            return UNKNOWN_CLIENT
        # `peer` is the socket's (as far as uvicorn goes).
        if address is not None and self._trusts(address):
            return self._forwarded_client(entries, address_key(address))
        # Neither uvicorn nor the plugin reads these two; should the host app's middleware
        # have taken `peer` from one of them, nothing vouches for it.
        if any(peer.lower() in value for value in others):
            return UNKNOWN_CLIENT
        return address_key(address) if address is not None else peer

    def _maybe_rewritten(self, peer: str, address: IPAddress | None, entries: list[str]) -> bool:
        """Whether uvicorn can have taken `peer` from X-Forwarded-For: an entry names it
        and every entry after that one is an address uvicorn trusts (it takes the last one
        that is not)."""
        named = [
            index
            for index, entry in enumerate(entries)
            if entry == peer or (address is not None and _forwarded_address(entry) == address)
        ]
        if not named:
            return False
        later = [_forwarded_address(entry) for entry in entries[named[-1] + 1 :]]
        return all(
            hop is not None and any(hop in network for network in self._server_trusted)
            for hop in later
        )

    def _forwarded_client(self, entries: list[str], fallback: str) -> str:
        """The client X-Forwarded-For names: the last entry not one of our proxies (each
        proxy appends the address it was connected from), or the first when all are."""
        client = fallback
        for entry in reversed([entry for entry in entries if entry]):
            address = _forwarded_address(entry)
            if address is None:
                return UNKNOWN_CLIENT
            client = address_key(address)
            if not self._trusts(address):
                break
        return client

    def _trusts(self, address: IPAddress) -> bool:
        return any(address in network for network in self._proxies)

    def _trusts_network(self, network: IPNetwork) -> bool:
        return any(
            network.version == proxy.version and network.subnet_of(proxy)  # type: ignore[arg-type]
            for proxy in self._proxies
        )


def address_key(address: IPAddress) -> str:
    """The failure count an address belongs to: itself, or its /64 for IPv6."""
    if address.version == 6:
        return str(ipaddress.ip_network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)


def _address(text: str) -> IPAddress | None:
    """An address as an IP (an IPv4-mapped IPv6 one as IPv4), None if it is none."""
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped if mapped is not None else address


def _forwarded_address(entry: str) -> IPAddress | None:
    """One X-Forwarded-For entry, which may carry a port (`1.2.3.4:80`, `[::1]:80`)."""
    host = entry.strip()
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    return _address(host)


def _server_networks(server_trusted: str) -> list[IPNetwork]:
    """uvicorn's FORWARDED_ALLOW_IPS as networks; `*` (every address) as both whole
    spaces. Names that are no address (a Unix socket's path) belong to no TCP peer."""
    networks: list[IPNetwork] = []
    for item in (part.strip() for part in server_trusted.split(",")):
        if item == "*":
            return [ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")]
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            continue
    return networks


class PanelAuth:
    """The token, the logged-in sessions and the failure counts, in memory (a restart
    logs everyone out, which is fine for one operator)."""

    def __init__(
        self,
        token: str,
        clients: ClientAddresses | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self._token = token.encode()
        self.clients = clients if clients is not None else ClientAddresses()
        self._clock = clock
        self._sessions: dict[str, PanelSession] = {}
        self._failures: dict[str, deque[float]] = {}
        self._all_failures: deque[float] = deque()

    def token_matches(self, candidate: str) -> bool:
        """Constant-time comparison with the configured token."""
        return hmac.compare_digest(candidate.encode(), self._token)

    def limited(self, client: str) -> bool:
        """Whether `client`, or every client together, made too many wrong attempts lately.
        Call it and `note_failure` with no `await` between: concurrent guesses then cannot
        all pass the check before the first of them is counted."""
        cutoff = self._clock() - FAILURE_WINDOW_SECONDS
        while self._all_failures and self._all_failures[0] < cutoff:
            self._all_failures.popleft()
        if len(self._all_failures) >= MAX_FAILURES_ALL_CLIENTS:
            return True
        failures = self._recent_failures(client)
        return failures is not None and len(failures) >= MAX_FAILURES

    def note_failure(self, client: str) -> None:
        """Count one wrong token from `client`."""
        failures = self._recent_failures(client)
        if failures is None:
            failures = self._failures[client] = deque()
        now = self._clock()
        failures.append(now)
        self._all_failures.append(now)
        if len(self._failures) > MAX_SESSIONS * 16:
            self._failures.pop(next(iter(self._failures)))

    def _recent_failures(self, client: str) -> deque[float] | None:
        failures = self._failures.get(client)
        if failures is None:
            return None
        cutoff = self._clock() - FAILURE_WINDOW_SECONDS
        while failures and failures[0] < cutoff:
            failures.popleft()
        if not failures:
            del self._failures[client]
            return None
        return failures

    def open_session(self) -> tuple[str, PanelSession]:
        """A new session id and its session, after a right token."""
        now = self._clock()
        for sid in [s for s, session in self._sessions.items() if session.expires_at <= now]:
            del self._sessions[sid]
        while len(self._sessions) >= MAX_SESSIONS:
            self._sessions.pop(next(iter(self._sessions)))
        sid = secrets.token_urlsafe(32)
        session = self._sessions[sid] = PanelSession(
            secrets.token_urlsafe(32), now + SESSION_SECONDS
        )
        return sid, session

    def session(self, sid: str | None) -> PanelSession | None:
        """The live session with this id, or None."""
        if not sid:
            return None
        session = self._sessions.get(sid)
        if session is None:
            return None
        if session.expires_at <= self._clock():
            del self._sessions[sid]
            return None
        return session

    def close_session(self, sid: str | None) -> None:
        """Log a session out."""
        if sid:
            self._sessions.pop(sid, None)


def csrf_matches(session: PanelSession, header: str | None) -> bool:
    """Whether the request carries the session's CSRF token."""
    return bool(header) and hmac.compare_digest(str(header).encode(), session.csrf.encode())

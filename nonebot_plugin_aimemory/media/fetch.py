"""GETs of URLs someone else wrote (a model's reply, a QQ message): the host is resolved once,
every address it resolves to is checked, and the connection goes to a checked address — no
second lookup a rebinding DNS server could answer differently, no proxy from the
environment, and no compressed body to inflate past the byte cap."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable

import httpx

from .addresses import is_public_address

# (host, port) -> its addresses, most preferred first.
Resolver = Callable[[str, int], Awaitable[list[str]]]
# A fresh transport that connects to whatever address the request's URL names.
TransportFactory = Callable[[ssl.SSLContext], httpx.AsyncBaseTransport]


class FetchRefused(ValueError):
    """The URL is not fetched: not http(s), no host, a host outside the allowed networks, or
    a body the server wants to send compressed."""


class BodyTooLarge(Exception):
    """The body is over the byte cap."""


async def resolve_host(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to, in the system resolver's order (an unreachable
    family fails fast and the next address is tried); an IP literal is its own only
    address. Raises OSError when the name does not resolve."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [host]
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def direct_transport(tls: ssl.SSLContext) -> httpx.AsyncBaseTransport:
    """A plain HTTP(S) transport: no proxy and no retries."""
    return httpx.AsyncHTTPTransport(verify=tls, trust_env=False, retries=0)


class PinnedTransport(httpx.AsyncBaseTransport):
    """Sends the requests for one host to one address checked beforehand: the URL given to
    the inner transport names the address, the Host header and TLS (SNI and certificate
    check) keep the host's name. Requests for any other host are refused."""

    def __init__(self, host: str, address: str, inner: httpx.AsyncBaseTransport) -> None:
        self.host = host
        self.address = address
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Rewrite the request to the pinned address and send it."""
        if request.url.raw_host.decode("ascii") != self.host:
            raise httpx.ConnectError(f"not the pinned host {self.host}", request=request)
        if self.address != self.host:
            # The Host header was written from the original URL when the request was built.
            if request.url.scheme == "https":
                request.extensions = {**request.extensions, "sni_hostname": self.host}
            request.url = request.url.copy_with(host=self.address)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()


class SafeFetcher:
    """Fetches untrusted URLs as the module says, through its `resolver` and `transport`
    (the system's by default; tests put their own in)."""

    def __init__(
        self,
        *,
        resolver: Resolver = resolve_host,
        transport: TransportFactory = direct_transport,
    ) -> None:
        self.resolver = resolver
        self.transport = transport
        self._tls: ssl.SSLContext | None = None

    async def get(
        self, url: str, *, max_bytes: int, public_only: bool, timeout_seconds: float
    ) -> bytes:
        """The body of a GET of `url`, at most `max_bytes` long, from an address that passes
        `public_only`. Raises FetchRefused, BodyTooLarge, OSError (no such host) or
        httpx.HTTPError. Redirects are not followed: the checked host is the fetched one."""
        target = _http_url(url)
        host = target.raw_host.decode("ascii")
        addresses = await self.resolver(host, target.port or _default_port(target))
        if not addresses:
            raise FetchRefused(f"{host} has no address")
        if public_only and not all(is_public_address(address) for address in addresses):
            raise FetchRefused(f"{host} is not a public address")
        tls = await self._tls_context()
        for address in addresses[:-1]:
            try:
                return await self._get_from(target, host, address, tls, max_bytes, timeout_seconds)
            except httpx.ConnectError:
                continue  # nothing was received; the next checked address may answer
        return await self._get_from(target, host, addresses[-1], tls, max_bytes, timeout_seconds)

    async def _get_from(
        self,
        url: httpx.URL,
        host: str,
        address: str,
        tls: ssl.SSLContext,
        max_bytes: int,
        timeout_seconds: float,
    ) -> bytes:
        transport = PinnedTransport(host, address, self.transport(tls))
        # trust_env=False: HTTP(S)_PROXY would make the proxy, not us, pick the address.
        async with httpx.AsyncClient(
            transport=transport, trust_env=False, timeout=timeout_seconds
        ) as client:
            # Images are compressed already; asking for the body as it is keeps a small
            # gzip or brotli bomb from inflating in memory before the cap can be counted.
            headers = {"Accept-Encoding": "identity"}
            async with client.stream("GET", url, headers=headers) as response:
                response.raise_for_status()
                return await _read_capped(response, max_bytes)

    async def _tls_context(self) -> ssl.SSLContext:
        # Loading the CA bundle takes tens of milliseconds: once, and off the event loop.
        if self._tls is None:
            self._tls = await asyncio.to_thread(httpx.create_ssl_context, trust_env=False)
        return self._tls


async def _read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    """The undecoded body, refused when it is encoded or longer than `max_bytes`."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        raise FetchRefused(f"body sent with content-encoding {encoding[:20]!r}")
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise BodyTooLarge(f"{declared} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLarge(f"over {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _http_url(url: str) -> httpx.URL:
    if not url.startswith(("http://", "https://")):
        raise FetchRefused(f"not an http(s) URL: {url[:60]!r}")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise FetchRefused(f"bad URL: {url[:60]!r}") from exc
    if not parsed.raw_host:
        raise FetchRefused(f"no host in {url[:60]!r}")
    return parsed


def _default_port(url: httpx.URL) -> int:
    return 443 if url.scheme == "https" else 80

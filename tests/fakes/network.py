"""The network around an image fetch, under the test's control: a name server that answers
from a script (to rebind a name between lookups), a transport that records where each
request would connect instead of connecting, and proxy variables aimed at a closed port."""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass, field

import httpx
import pytest

from tests.fakes.image_server import png_bytes

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


class ScriptedResolver:
    """Answers the n-th lookup of a name with its n-th scripted answer (the last one
    repeats), as a rebinding DNS server would; records every lookup."""

    def __init__(self, script: dict[str, list[list[str]]]) -> None:
        self.script = script
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        answers = self.script.get(host)
        if not answers:
            raise OSError(f"no such host: {host}")
        asked = self.lookups.count(host)
        self.lookups.append(host)
        return list(answers[min(asked, len(answers) - 1)])


@dataclass(frozen=True)
class Connection:
    """Where a request would have gone: the address in its URL, its Host header and the
    name TLS would send (SNI) and check the certificate against."""

    scheme: str
    address: str
    host_header: str
    sni_hostname: str | None


@dataclass
class RecordingTransport:
    """A transport factory for `SafeFetcher`: every request is recorded, not sent, and
    answered with `body` as a PNG."""

    body: bytes = field(default_factory=png_bytes)
    connections: list[Connection] = field(default_factory=list)

    def __call__(self, tls: ssl.SSLContext) -> httpx.AsyncBaseTransport:
        return httpx.MockTransport(self._answer)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.connections.append(
            Connection(
                scheme=request.url.scheme,
                address=request.url.host,
                host_header=request.headers["host"],
                sni_hostname=request.extensions.get("sni_hostname"),
            )
        )
        # A stream, not `content=`: the fetcher reads the body raw, as it comes off a socket.
        return httpx.Response(
            200, stream=httpx.ByteStream(self.body), headers={"Content-Type": "image/png"}
        )


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def proxies_to_a_closed_port(monkeypatch: pytest.MonkeyPatch, *, no_proxy: str = "") -> str:
    """Point every proxy variable (both spellings) at a dead proxy; returns its URL."""
    proxy = f"http://127.0.0.1:{closed_port()}"
    for name in PROXY_VARIABLES:
        monkeypatch.setenv(name, proxy)
        monkeypatch.setenv(name.lower(), proxy)
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.setenv("no_proxy", no_proxy)
    return proxy

"""The limit on wrong tokens, over a real socket: the panel served by uvicorn on 127.0.0.1
(whose proxy-headers default rewrites the client address from X-Forwarded-For for
connections from 127.0.0.1 and ::1), clients connecting from 127.0.0.x. A forwarding header
neither buys fresh attempts nor locks out another client; behind AIMEMORY_PANEL_TRUSTED_
PROXIES each forwarded client has its own count, believed only from those proxies."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.panel.browser import serving
from tests.panel.conftest import BASE, PANEL_TOKEN

WRONG = "not-the-panel-token"
# A few of the loopback addresses every Linux machine answers on: distinct socket peers.
ATTACKER, VICTIM, BYSTANDER = "127.0.0.1", "127.0.0.2", "127.0.0.3"


def forged(kind: str, address: str) -> dict[str, str]:
    """A forwarding header of `kind` naming `address`."""
    if kind == "forwarded":
        return {"Forwarded": f"for={address};proto=http"}
    return {kind: address}


FORGED_KINDS = ["X-Forwarded-For", "forwarded", "X-Real-IP"]


@dataclass
class FakeClock:
    """Monotonic seconds the test moves forward."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class ServedPanel:
    """The panel's routes on a real uvicorn server; `client(local)` connects from `local`."""

    url: str
    clock: FakeClock
    clients: dict[str, httpx.AsyncClient] = field(default_factory=dict)

    def client(self, local: str = ATTACKER) -> httpx.AsyncClient:
        if local not in self.clients:
            transport = httpx.AsyncHTTPTransport(local_address=local)
            self.clients[local] = httpx.AsyncClient(
                transport=transport, base_url=self.url, timeout=5
            )
        return self.clients[local]

    async def login(self, token: str, local: str = ATTACKER, **headers: str) -> int:
        response = await self.client(local).post(
            f"{BASE}/login", data={"token": token}, headers=headers
        )
        return response.status_code

    async def bearer(self, token: str, local: str = ATTACKER, **headers: str) -> int:
        response = await self.client(local).get(
            f"{BASE}/api/chats", headers={"Authorization": f"Bearer {token}", **headers}
        )
        return response.status_code


def panel_app(
    trusted_proxies: tuple[str, ...] = (),
    server_trusted: str | None = None,
    clock: Callable[[], float] | None = None,
    wrap: Callable[[Any], Any] | None = None,
) -> tuple[Any, Any]:
    """A FastAPI app with the panel's routes for the installed runtime, its wrong tokens
    counted with these trusted proxies; and the PanelData to close."""
    from fastapi import FastAPI

    from nonebot_plugin_aimemory.panel.auth import ClientAddresses, PanelAuth
    from nonebot_plugin_aimemory.panel.routes import build_router
    from nonebot_plugin_aimemory.panel.views import NoNames, PanelData
    from nonebot_plugin_aimemory.runtime import current_runtime

    networks = [ipaddress.ip_network(proxy) for proxy in trusted_proxies]
    clients = ClientAddresses(networks, server_trusted=server_trusted)
    auth = PanelAuth(PANEL_TOKEN, clients, **({"clock": clock} if clock else {}))
    data = PanelData(NoNames())
    app = FastAPI()
    app.include_router(build_router(BASE, auth, data, current_runtime))
    return (wrap(app) if wrap else app), data


@contextlib.asynccontextmanager
async def served_panel(
    trusted_proxies: tuple[str, ...] = (), server_trusted: str | None = None, **options: Any
) -> AsyncIterator[ServedPanel]:
    """The panel on a real uvicorn server; its failure clock is the test's."""
    clock = FakeClock()
    app, data = panel_app(trusted_proxies, server_trusted, clock)
    async with serving(app, log_config=None, **options) as url:
        served = ServedPanel(url, clock)
        try:
            yield served
        finally:
            for client in served.clients.values():
                await client.aclose()
            await data.close()


@pytest.fixture
async def panel_server(plugin) -> AsyncIterator[ServedPanel]:
    """The panel as NoneBot serves it by default: no trusted proxies."""
    async with served_panel() as served:
        yield served


async def test_a_fresh_forged_x_forwarded_for_per_try_still_meets_429(panel_server) -> None:
    for n in range(5):
        assert await panel_server.login(WRONG, **{"X-Forwarded-For": f"198.51.100.{n}"}) == 401

    then = await panel_server.login(PANEL_TOKEN, **{"X-Forwarded-For": "198.51.100.99"})

    assert then == 429


@pytest.mark.parametrize("kind", FORGED_KINDS)
async def test_429_holds_whatever_forwarding_header_each_try_forges(
    panel_server, kind: str
) -> None:
    for n in range(5):
        await panel_server.login(WRONG, **forged(kind, f"203.0.113.{n}"))

    statuses = [
        await panel_server.login(WRONG, **forged(kind, f"203.0.113.{50 + n}")) for n in range(3)
    ]

    assert statuses == [429, 429, 429]


@pytest.mark.parametrize("kind", FORGED_KINDS)
async def test_a_forged_header_naming_another_client_does_not_lock_it_out(
    panel_server, kind: str
) -> None:
    for _ in range(10):
        await panel_server.login(WRONG, ATTACKER, **forged(kind, VICTIM))

    assert await panel_server.login(PANEL_TOKEN, VICTIM) == 303


async def test_wrong_tokens_lock_out_their_own_address_and_no_other(panel_server) -> None:
    for _ in range(5):
        await panel_server.login(WRONG, VICTIM)

    assert await panel_server.login(PANEL_TOKEN, VICTIM) == 429
    assert await panel_server.login(PANEL_TOKEN, BYSTANDER) == 303


async def test_the_bearer_limit_holds_under_fresh_forged_headers(panel_server) -> None:
    for n in range(5):
        await panel_server.bearer(WRONG, **{"X-Forwarded-For": f"192.0.2.{n}"})

    then = await panel_server.bearer(PANEL_TOKEN, **{"X-Forwarded-For": "192.0.2.200"})

    assert then == 429


async def test_concurrent_wrong_tokens_cannot_all_pass_the_check_before_one_is_counted(
    panel_server,
) -> None:
    # Forty logins whose heads arrive first and bodies later: all are waiting at once.
    port = int(panel_server.url.rsplit(":", 1)[1])
    body = f"token={WRONG}".encode()
    head = (
        f"POST {BASE}/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n\r\n"
    ).encode()
    connections = [await asyncio.open_connection("127.0.0.1", port) for _ in range(40)]
    for _, writer in connections:
        writer.write(head)
    await asyncio.sleep(0.2)
    for _, writer in connections:
        writer.write(body)

    statuses = [int((await reader.readline()).split()[1]) for reader, _ in connections]
    for _, writer in connections:
        writer.close()

    assert statuses.count(401) == 5
    assert statuses.count(429) == 35


async def test_the_limit_lifts_a_minute_after_the_oldest_wrong_token(panel_server) -> None:
    for _ in range(5):
        await panel_server.login(WRONG)
    panel_server.clock.now += 61

    assert await panel_server.login(PANEL_TOKEN) == 303


async def test_wrong_tokens_from_many_addresses_together_close_the_login_for_all(
    panel_server,
) -> None:
    # Six real addresses, five wrong tokens each: 30, the limit for all clients together.
    for host in range(10, 16):
        for _ in range(5):
            await panel_server.login(WRONG, f"127.0.0.{host}")

    closed = await panel_server.login(PANEL_TOKEN, BYSTANDER)
    panel_server.clock.now += 61
    reopened = await panel_server.login(PANEL_TOKEN, BYSTANDER)

    assert (closed, reopened) == (429, 303)


async def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_count(plugin) -> None:
    async with served_panel(trusted_proxies=("127.0.0.1",)) as panel:
        # The proxy appends the address it was connected from; what comes before is the
        # client's own to forge.
        for n in range(5):
            chain = f"10.9.9.{n}, 198.51.100.7"
            await panel.login(WRONG, ATTACKER, **{"X-Forwarded-For": chain})

        same_client = await panel.login(
            PANEL_TOKEN, ATTACKER, **{"X-Forwarded-For": "10.9.9.99, 198.51.100.7"}
        )
        other_client = await panel.login(
            PANEL_TOKEN, ATTACKER, **{"X-Forwarded-For": "198.51.100.8"}
        )

    assert (same_client, other_client) == (429, 303)


async def test_forwarding_headers_from_an_address_not_a_trusted_proxy_are_not_believed(
    plugin,
) -> None:
    async with served_panel(trusted_proxies=("127.0.0.1",)) as panel:
        for n in range(5):
            await panel.login(WRONG, VICTIM, **{"X-Forwarded-For": f"198.51.100.{n}"})
        fresh_forgery = await panel.login(
            PANEL_TOKEN, VICTIM, **{"X-Forwarded-For": "198.51.100.77"}
        )
        # Nor can it spend the count of the client it names.
        for _ in range(5):
            await panel.login(WRONG, BYSTANDER, **{"X-Forwarded-For": "198.51.100.9"})
        named_client = await panel.login(
            PANEL_TOKEN, ATTACKER, **{"X-Forwarded-For": "198.51.100.9"}
        )

    assert (fresh_forgery, named_client) == (429, 303)


async def test_a_proxy_uvicorn_does_not_trust_is_believed_and_uvicorns_rewrites_are_not(
    plugin,
) -> None:
    # The proxy at 127.0.0.2 is ours but not uvicorn's; uvicorn still rewrites the address
    # of connections from 127.0.0.1, which the plugin then cannot tell apart.
    async with served_panel(trusted_proxies=(VICTIM,)) as panel:
        for _ in range(5):
            await panel.login(WRONG, VICTIM, **{"X-Forwarded-For": "198.51.100.7"})
        for n in range(5):
            await panel.login(WRONG, ATTACKER, **{"X-Forwarded-For": f"192.0.2.{n}"})

        proxied_same = await panel.login(PANEL_TOKEN, VICTIM, **{"X-Forwarded-For": "198.51.100.7"})
        proxied_other = await panel.login(
            PANEL_TOKEN, VICTIM, **{"X-Forwarded-For": "198.51.100.8"}
        )
        rewritten = await panel.login(PANEL_TOKEN, ATTACKER, **{"X-Forwarded-For": "192.0.2.99"})

    assert (proxied_same, proxied_other, rewritten) == (429, 303, 429)


async def test_when_uvicorn_trusts_every_address_no_rewrite_is_believed(plugin) -> None:
    async with served_panel(
        trusted_proxies=("127.0.0.1",), server_trusted="*", forwarded_allow_ips="*"
    ) as panel:
        for n in range(5):
            await panel.login(WRONG, VICTIM, **{"X-Forwarded-For": f"198.51.100.{n}"})

        then = await panel.login(PANEL_TOKEN, VICTIM, **{"X-Forwarded-For": "198.51.100.99"})

    assert then == 429


async def test_the_configured_trusted_proxies_reach_the_mounted_panel(plugin) -> None:
    from fastapi import FastAPI
    from pydantic import SecretStr

    from nonebot_plugin_aimemory.panel import panel_router
    from nonebot_plugin_aimemory.panel.views import NoNames
    from nonebot_plugin_aimemory.runtime import current_runtime

    config = plugin.config().model_copy(
        update={
            "aimemory_panel_token": SecretStr(PANEL_TOKEN),
            "aimemory_panel_trusted_proxies": ["127.0.0.1/32"],
        }
    )
    router, data = panel_router(config, NoNames(), current_runtime)  # type: ignore[arg-type]
    app = FastAPI()
    app.include_router(router)
    async with serving(app, log_config=None) as url:
        panel = ServedPanel(url, FakeClock())
        for _ in range(5):
            await panel.login(WRONG, **{"X-Forwarded-For": "198.51.100.7"})
        other_client = await panel.login(PANEL_TOKEN, **{"X-Forwarded-For": "198.51.100.8"})
        for client in panel.clients.values():
            await client.aclose()
    await data.close()

    assert other_client == 303


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "counted_as"),
    [
        # Every address of one IPv6 /64 is one client.
        ("2001:db8:1:2:aaaa::1", None, "2001:db8:1:2::/64"),
        ("::ffff:192.0.2.1", None, "192.0.2.1"),
        # From a trusted proxy, entries may carry ports; the proxies in the chain are skipped.
        ("127.0.0.1", "198.51.100.7:5000, 127.0.0.1", "198.51.100.7"),
        ("127.0.0.1", "[2001:db8::7]:443", "2001:db8::/64"),
        # Garbage from a trusted proxy names nobody.
        ("127.0.0.1", "unknown", "unknown"),
    ],
)
def test_who_a_request_counts_as(peer: str, forwarded_for: str | None, counted_as: str) -> None:
    from nonebot_plugin_aimemory.panel.auth import ClientAddresses

    clients = ClientAddresses([ipaddress.ip_network("127.0.0.1")], server_trusted="127.0.0.1")
    headers = [("x-forwarded-for", forwarded_for)] if forwarded_for else []

    assert clients.client_of(peer, headers) == counted_as


def test_a_peer_that_picked_its_own_forwarded_entry_still_counts_as_itself() -> None:
    # Not rewritten (uvicorn would have taken the last entry), so the socket's peer; it
    # cannot make the plugin read a fresh address further right.
    from nonebot_plugin_aimemory.panel.auth import ClientAddresses

    clients = ClientAddresses([ipaddress.ip_network("127.0.0.1")], server_trusted="127.0.0.1")
    headers = [("x-forwarded-for", "203.0.113.9, 198.51.100.1")]

    assert clients.client_of("203.0.113.9", headers) == "203.0.113.9"


@pytest.mark.parametrize(
    ("raw", "networks"),
    [
        ("", ()),
        ("127.0.0.1", ("127.0.0.1/32",)),
        ("127.0.0.1, 10.0.0.0/8，::1", ("127.0.0.1/32", "10.0.0.0/8", "::1/128")),
        (["192.168.1.20/24"], ("192.168.1.0/24",)),
    ],
)
def test_trusted_proxies_are_read_as_networks(raw: object, networks: tuple[str, ...]) -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config.model_validate({"aimemory_panel_trusted_proxies": raw})

    assert tuple(str(network) for network in config.panel_trusted_proxies) == networks


@pytest.mark.parametrize("raw", ["127.0.0.1, nginx", "*", "10.0.0.0/33", 5])
def test_a_trusted_proxy_that_is_no_address_is_a_configuration_error_naming_it(
    raw: object,
) -> None:
    from pydantic import ValidationError

    from nonebot_plugin_aimemory.config import Config, describe_validation_error

    with pytest.raises(ValidationError) as caught:
        Config.model_validate({"aimemory_panel_trusted_proxies": raw})

    described = describe_validation_error(caught.value)
    assert described.startswith("aimemory_panel_trusted_proxies:")
    assert "is not an IP address or network" in described
    assert "10.0.0.0/8" in described  # what a valid one looks like

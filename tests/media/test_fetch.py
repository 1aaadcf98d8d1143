"""Fetching a URL someone else wrote: the name is resolved once, every address is checked,
the connection goes to a checked address under the host's name (Host header, TLS SNI), and
a compressed body is refused before it can inflate."""

from __future__ import annotations

import tracemalloc

import pytest

from tests.fakes.image_server import ImageServer, gzip_bomb, png_bytes
from tests.fakes.network import Connection, RecordingTransport, ScriptedResolver

PNG = png_bytes()
MAX_BYTES = 4096
TIMEOUT_SECONDS = 2.0


async def fetch(fetcher, url: str, *, public_only: bool) -> bytes:
    return await fetcher.get(
        url, max_bytes=MAX_BYTES, public_only=public_only, timeout_seconds=TIMEOUT_SECONDS
    )


async def test_image_is_fetched_from_the_resolved_address_under_the_hosts_name(
    images: ImageServer,
) -> None:
    from nonebot_plugin_aimemory.media.fetch import SafeFetcher

    # `pics.test` exists only in the scripted resolver: the system's could not find it.
    resolver = ScriptedResolver({"pics.test": [["127.0.0.1"]]})
    url = images.add_image("cat.png", PNG).replace("127.0.0.1", "pics.test")

    body = await fetch(SafeFetcher(resolver=resolver), url, public_only=False)

    assert body == PNG
    (served,) = images.served("cat.png")
    assert served.headers["host"] == f"pics.test:{images.port}"
    assert resolver.lookups == ["pics.test"]


async def test_name_is_resolved_once_so_a_rebound_answer_is_never_connected_to() -> None:
    from nonebot_plugin_aimemory.media.fetch import SafeFetcher

    # A rebinding name server: public for the check, the bot's own machine afterwards.
    resolver = ScriptedResolver({"evil.test": [["93.184.216.34"], ["127.0.0.1"]]})
    transport = RecordingTransport()
    fetcher = SafeFetcher(resolver=resolver, transport=transport)

    body = await fetch(fetcher, "http://evil.test/cat.png", public_only=True)

    assert body == PNG
    assert resolver.lookups == ["evil.test"]
    assert transport.connections == [Connection("http", "93.184.216.34", "evil.test", None)]


async def test_https_connection_to_the_checked_address_sends_the_hosts_name_for_tls() -> None:
    from nonebot_plugin_aimemory.media.fetch import SafeFetcher

    resolver = ScriptedResolver({"pics.test": [["2606:4700::1"]]})
    transport = RecordingTransport()
    fetcher = SafeFetcher(resolver=resolver, transport=transport)

    await fetch(fetcher, "https://pics.test:8443/cat.png", public_only=True)

    assert transport.connections == [
        Connection("https", "2606:4700::1", "pics.test:8443", "pics.test")
    ]


@pytest.mark.parametrize(
    "addresses",
    [["8.8.8.8", "10.0.0.1"], ["2606:4700::1", "64:ff9b::7f00:1"], ["fec0::1"]],
    ids=["one-private-among-public", "nat64-to-loopback", "site-local"],
)
async def test_name_with_any_non_public_address_is_refused_before_connecting(
    addresses: list[str],
) -> None:
    from nonebot_plugin_aimemory.media.fetch import FetchRefused, SafeFetcher

    transport = RecordingTransport()
    fetcher = SafeFetcher(
        resolver=ScriptedResolver({"mixed.test": [addresses]}), transport=transport
    )

    with pytest.raises(FetchRefused):
        await fetch(fetcher, "http://mixed.test/cat.png", public_only=True)

    assert transport.connections == []


async def test_next_checked_address_is_tried_when_one_refuses_the_connection(
    images: ImageServer,
) -> None:
    from nonebot_plugin_aimemory.media.fetch import SafeFetcher

    # Nothing listens on 127.0.0.2: the image server is bound to 127.0.0.1 only.
    resolver = ScriptedResolver({"pics.test": [["127.0.0.2", "127.0.0.1"]]})
    url = images.add_image("cat.png", PNG).replace("127.0.0.1", "pics.test")

    body = await fetch(SafeFetcher(resolver=resolver), url, public_only=False)

    assert body == PNG
    assert resolver.lookups == ["pics.test"]


async def test_gzip_bomb_is_refused_without_being_inflated(images: ImageServer) -> None:
    from nonebot_plugin_aimemory.media.fetch import FetchRefused, SafeFetcher

    bomb = gzip_bomb(32 * 1024 * 1024)
    assert len(bomb) < MAX_BYTES * 10
    bomb_url = images.add_encoded("bomb.png", bomb, "gzip")
    fetcher = SafeFetcher()
    await fetch(fetcher, images.add_image("warm-up.png", PNG), public_only=False)
    tracemalloc.start()
    try:
        baseline, _ = tracemalloc.get_traced_memory()
        with pytest.raises(FetchRefused):
            await fetch(fetcher, bomb_url, public_only=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak - baseline < 1024 * 1024
    (served,) = images.served("bomb.png")
    assert served.headers["accept-encoding"] == "identity"

"""Which addresses count as public for fetches the model or a message asks for: ordinary
internet hosts do; the bot's own machine and networks never do, whatever IPv6 form leads
there (IPv4-mapped or -compatible, NAT64, 6to4, Teredo, site-local)."""

from __future__ import annotations

import pytest

REFUSED = {
    # IPv4
    "this-network": "0.1.2.3",
    "unspecified-v4": "0.0.0.0",
    "private-10": "10.1.2.3",
    "private-172": "172.16.0.1",
    "private-192": "192.168.1.1",
    "cgnat": "100.64.0.1",
    "cgnat-top": "100.127.255.254",
    "loopback-v4": "127.0.0.1",
    "loopback-v4-other": "127.1.2.3",
    "link-local-v4": "169.254.169.254",
    "ietf-protocol": "192.0.0.8",
    "documentation-v4": "192.0.2.1",
    "benchmarking": "198.18.0.1",
    "multicast-v4": "224.0.0.1",
    "multicast-v4-global-scope": "233.252.0.1",
    "reserved-v4": "240.0.0.1",
    "broadcast": "255.255.255.255",
    # IPv6
    "unspecified-v6": "::",
    "loopback-v6": "::1",
    "ipv4-compatible-loopback": "::7f00:1",
    "ipv4-compatible-public": "::808:808",
    "ipv4-mapped-loopback": "::ffff:127.0.0.1",
    "ipv4-mapped-private": "::ffff:10.0.0.1",
    "ipv4-mapped-metadata": "::ffff:169.254.169.254",
    "nat64-loopback": "64:ff9b::7f00:1",
    "nat64-private": "64:ff9b::a00:1",
    "nat64-cgnat": "64:ff9b::6440:1",
    "nat64-local-use": "64:ff9b:1::808:808",
    "6to4-loopback": "2002:7f00:1::1",
    "6to4-private": "2002:c0a8:101::1",
    "6to4-this-network": "2002::1",
    "teredo": "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "teredo-loopback-server": "2001:0:7f00:1::1",
    "site-local": "fec0::1",
    "site-local-top": "feff::1",
    "unique-local": "fd12:3456::1",
    "unique-local-fc": "fc00::1",
    "link-local-v6": "fe80::1",
    "link-local-v6-zone": "fe80::1%eth0",
    "multicast-v6": "ff02::1",
    "multicast-v6-global-scope": "ff0e::1",
    "documentation-v6": "2001:db8::1",
    "documentation-v6-3fff": "3fff::1",
    "discard": "100::1",
    "srv6": "5f00::1",
    # Not an address at all
    "hostname": "example.com",
    "empty": "",
}

ALLOWED = {
    "google-dns": "8.8.8.8",
    "cloudflare-dns": "1.1.1.1",
    "qq-cdn": "183.3.226.35",
    "just-outside-cgnat": "100.128.0.1",
    "cloudflare-v6": "2606:4700::1",
    "google-v6": "2404:6800:4008:c06::66",
    "ipv4-mapped-public": "::ffff:8.8.8.8",
    "nat64-public": "64:ff9b::808:808",
    "6to4-public": "2002:808:808::1",
}


@pytest.mark.parametrize("address", REFUSED.values(), ids=REFUSED.keys())
def test_address_of_the_bots_own_networks_is_not_public(address: str) -> None:
    from nonebot_plugin_aimemory.media.addresses import is_public_address

    assert not is_public_address(address)


@pytest.mark.parametrize("address", ALLOWED.values(), ids=ALLOWED.keys())
def test_ordinary_internet_address_is_public(address: str) -> None:
    from nonebot_plugin_aimemory.media.addresses import is_public_address

    assert is_public_address(address)

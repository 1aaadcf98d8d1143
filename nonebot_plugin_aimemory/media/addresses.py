"""Which network a host is on: the bot fetches images the model links to only from public
addresses, and warns about a missing API key only for hosted APIs."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Written out rather than left to `is_global`, whose tables differ between Python releases
# (3.11 counts fec0::/10 and ::7f00:1 as global). `is_global` is still checked on top.
_REFUSED_IPV4 = tuple(
    ipaddress.IPv4Network(network)
    for network in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",
        "100.64.0.0/10",  # carrier-grade NAT
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local, cloud metadata
        "172.16.0.0/12",
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # 6to4 relay anycast
        "192.168.0.0/16",
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
    )
)
_REFUSED_IPV6 = tuple(
    ipaddress.IPv6Network(network)
    for network in (
        "::/96",  # unspecified, loopback and the deprecated IPv4-compatible ::a.b.c.d
        "64:ff9b:1::/48",  # local-use NAT64
        "100::/64",  # discard
        # IETF protocol assignments: Teredo 2001::/32 (a tunnel to anywhere) among them;
        # the few reachable ones are anycast services, never image hosts.
        "2001::/23",
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation
        "5f00::/16",  # SRv6 segment identifiers
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "fec0::/10",  # deprecated site-local
        "ff00::/8",  # multicast
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def is_public_address(address: str) -> bool:
    """Whether an IP address is globally routable unicast. Addresses that carry an IPv4
    address (IPv4-mapped, NAT64, 6to4) are judged by the IPv4 address they lead to."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    target = embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else ip
    if target is None:
        target = ip
    return _is_public(target)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a connection to `ip` really reaches: IPv4-mapped `::ffff:a.b.c.d`,
    NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:aabb:ccdd::`; None for a plain IPv6 address."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    return ip.sixtofour


def _is_public(ip: IPAddress) -> bool:
    refused = _REFUSED_IPV4 if isinstance(ip, ipaddress.IPv4Address) else _REFUSED_IPV6
    if any(ip in network for network in refused):
        return False
    return ip.is_global and not ip.is_multicast


def is_local_url(url: str) -> bool:
    """Whether a URL points at this machine or a private network (Ollama, vLLM)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".local"):
        return True
    try:
        return not ipaddress.ip_address(host).is_global
    except ValueError:
        return False

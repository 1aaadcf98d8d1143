"""Which network a host is on: the bot fetches images the model links to only from public
addresses, and warns about a missing API key only for hosted APIs."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_public_address(address: str) -> bool:
    """Whether an IP address (v4, v6, v4-mapped v6) is globally routable unicast."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
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

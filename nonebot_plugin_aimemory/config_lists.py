"""Values written in .env as text the plugin reads itself: lists as `a,b` (full-width commas
too) rather than JSON — the groups a bot serves, the proxies the panel trusts (NoneBot may
already have read a lone number) —, and the PostgreSQL URL."""

from __future__ import annotations

from ipaddress import IPv4Network, IPv6Network, ip_network

Network = IPv4Network | IPv6Network


def comma_list(value: object) -> object:
    """`123,456` or `123` as a list; anything that is no text or number, unchanged."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, str):
        return [item.strip() for item in value.replace("，", ",").split(",") if item.strip()]
    return value


def network_list(value: object) -> list[str]:
    """`127.0.0.1, 10.0.0.0/8` (or a JSON list) as canonical network texts; ValueError
    names the first item that is none."""
    items = comma_list(value)
    if not isinstance(items, list | tuple):
        items = [items]
    networks = []
    for item in items:
        try:
            networks.append(str(ip_network(str(item).strip(), strict=False)))
        except ValueError:
            raise ValueError(
                f"{item!r} is not an IP address or network (like 127.0.0.1, ::1 or "
                "10.0.0.0/8; several separated by commas)"
            ) from None
    return networks


def networks(texts: list[str] | str) -> tuple[Network, ...]:
    """The networks `network_list` wrote."""
    return tuple(ip_network(text) for text in ([texts] if isinstance(texts, str) else texts))


POSTGRES_SCHEMES = ("postgresql", "postgres")


def check_database_url(url: str) -> None:
    """ValueError unless `url` is a PostgreSQL URL and its driver (the `[postgres]` extra)
    is installed. The message never repeats the URL: it holds the password."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in POSTGRES_SCHEMES:
        raise ValueError(
            "not a PostgreSQL URL; allowed: empty (the SQLite file) or "
            "postgresql://user:password@host:port/dbname"
        )
    try:
        import psycopg  # noqa: F401 - only whether it can be imported
    except ImportError:
        raise ValueError(
            'PostgreSQL needs the optional driver: pip install "nonebot-plugin-aimemory[postgres]"'
        ) from None

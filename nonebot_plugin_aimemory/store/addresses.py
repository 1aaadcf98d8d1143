"""Where the data is, as logs and status lines show it: a server's URL never with its
password."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def redacted(url: str) -> str:
    """`url` with its password replaced by `***`, for logs and status lines."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user, _, host = parts.netloc.rpartition("@")
    name = user.partition(":")[0]
    return urlunsplit((parts.scheme, f"{name}:***@{host}", parts.path, parts.query, parts.fragment))

"""The process's httpx client, made when first used: the chat call goes over the lean
client (http1.py), so a bot without embeddings, images or a proxy may never need httpx,
and making one (its TLS context reads certifi's ~150 roots) costs start-up ~0.1 s and
RSS ~2 MB."""

from __future__ import annotations

from typing import Any

import httpx

MAX_CONNECTIONS = 64
MAX_KEEPALIVE_CONNECTIONS = 16
CONNECT_TIMEOUT_SECONDS = 10.0


class SharedHttp:
    """One `httpx.AsyncClient` for every role, created at the first `post`."""

    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        """The client, made now if it does not exist yet."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout_seconds, connect=CONNECT_TIMEOUT_SECONDS),
                limits=httpx.Limits(
                    max_connections=MAX_CONNECTIONS,
                    max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS,
                ),
            )
        return self._client

    async def post(self, url: str, **kwargs: Any) -> httpx.Response:
        """`httpx.AsyncClient.post` on the shared client."""
        return await self.client.post(url, **kwargs)

    async def aclose(self) -> None:
        """Close the client if it was made."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

"""A caching stand-in for an OpenAI-compatible `/embeddings` endpoint on 127.0.0.1: vectors from
a JSON-lines file by (model, input_type, text); only unseen texts go to the real endpoint."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.panel.browser import serving

UPSTREAM_TIMEOUT_SECONDS = 300.0
Key = tuple[str, str, str]  # model, input_type, text


class EmbeddingCache:
    """Vectors by (model, input_type, text), loaded from and appended to a JSON-lines file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.vectors: dict[Key, list[float]] = {}
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        for model, input_type, text, vector in map(json.loads, filter(str.strip, lines)):
            self.vectors[(model, input_type, text)] = vector

    async def embed(self, upstream: httpx.AsyncClient, body: dict[str, Any]) -> list[list[float]]:
        """The vectors of the request's texts, asking `upstream` only for those not cached."""
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        keys = [(str(body.get("model", "")), str(body.get("input_type", "")), t) for t in texts]
        if missing := list(dict.fromkeys(key for key in keys if key not in self.vectors)):
            response = await upstream.post(
                "embeddings", json={**body, "input": [k[2] for k in missing]}
            )
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            learned = {
                k: [float(x) for x in d["embedding"]] for k, d in zip(missing, data, strict=True)
            }
            self.vectors |= learned
            await asyncio.to_thread(self.append, learned)
        return [self.vectors[key] for key in keys]

    def append(self, learned: dict[Key, list[float]]) -> None:
        """Add vectors to the file."""
        with self.path.open("a", encoding="utf-8") as file:
            for key, vector in learned.items():
                file.write(json.dumps([*key, vector], ensure_ascii=False) + "\n")


@asynccontextmanager
async def caching_endpoint(upstream_base: str, cache_path: Path) -> AsyncIterator[str]:
    """An API base on 127.0.0.1 serving `/embeddings` through a cache in `cache_path`."""
    from fastapi import Body, FastAPI

    cache, app = await asyncio.to_thread(EmbeddingCache, cache_path), FastAPI()
    base_url = upstream_base.rstrip("/") + "/"
    client = httpx.AsyncClient(base_url=base_url, timeout=UPSTREAM_TIMEOUT_SECONDS, trust_env=False)
    async with client as upstream:

        @app.post("/v1/embeddings")
        async def embeddings(body: dict[str, Any] = Body(...)) -> dict[str, Any]:
            vectors = enumerate(await cache.embed(upstream, body))
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in vectors]
            return {"object": "list", "data": data, "model": body.get("model", "")}

        async with serving(app) as root:
            yield f"{root}/v1"

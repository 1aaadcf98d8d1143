"""A caching stand-in for an OpenAI-compatible `/embeddings` endpoint: it answers on 127.0.0.1
from a JSON-lines file of vectors, asks the real endpoint only for texts it has not seen (by
model, `input_type` and text, all a vector depends on: the figures stay the endpoint's, only
the time of a call differs) and appends what it learns.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

UPSTREAM_TIMEOUT_SECONDS = 300.0


class EmbeddingCache:
    """Vectors by (model, input_type, text), loaded from and appended to a JSON-lines file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.vectors: dict[tuple[str, str, str], list[float]] = {}
        self.hits = self.misses = 0
        self._lock = threading.Lock()
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        for model, input_type, text, vector in map(json.loads, filter(str.strip, lines)):
            self.vectors[(model, input_type, text)] = vector

    def embed(self, upstream: httpx.Client, url: str, body: dict[str, Any]) -> list[list[float]]:
        """The vectors of the request's texts, asking `url` only for those not cached."""
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        keys = [(str(body.get("model", "")), str(body.get("input_type", "")), t) for t in texts]
        with self._lock:
            missing = list(dict.fromkeys(key for key in keys if key not in self.vectors))
            self.hits += len(keys) - len(missing)
            self.misses += len(missing)
        if missing:
            request = {**body, "input": [key[2] for key in missing]}
            response = upstream.post(url, json=request, timeout=UPSTREAM_TIMEOUT_SECONDS)
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            learned = {
                k: [float(x) for x in d["embedding"]] for k, d in zip(missing, data, strict=True)
            }
            with self._lock, self.path.open("a", encoding="utf-8") as file:
                self.vectors |= learned
                for key, vector in learned.items():
                    file.write(json.dumps([*key, vector], ensure_ascii=False) + "\n")
        return [self.vectors[key] for key in keys]


@contextmanager
def caching_endpoint(upstream_base: str, cache_path: Path) -> Iterator[tuple[str, EmbeddingCache]]:
    """An API base on 127.0.0.1 serving `/embeddings` through the cache, and the cache."""
    cache = EmbeddingCache(cache_path)
    url = upstream_base.rstrip("/") + "/embeddings"
    upstream = httpx.Client(trust_env=False)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes: without this, delayed ACKs add ~40 ms.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            try:
                vectors = enumerate(cache.embed(upstream, url, body))
                data = [{"object": "embedding", "index": i, "embedding": v} for i, v in vectors]
                status, answer = (
                    200,
                    {"object": "list", "data": data, "model": body.get("model", "")},
                )
            except httpx.HTTPError as exc:
                status, answer = 502, {"error": {"message": f"upstream: {exc}"}}
            payload = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", cache
    finally:
        server.shutdown()
        server.server_close()
        upstream.close()

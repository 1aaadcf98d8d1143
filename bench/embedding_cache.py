"""A caching stand-in for an OpenAI-compatible `/embeddings` endpoint, for benches that embed
the same texts run after run: it answers on 127.0.0.1 from a file of vectors, asks the real
endpoint only for texts it has not seen (by model, `input_type` and exact text), and saves
what it learns. A vector depends only on those three, so the figures are those of the real
endpoint; only the time of a call differs (and no latency target concerns embeddings).
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
Key = tuple[str, str, str]


class EmbeddingCache:
    """Vectors by (model, input_type, text), loaded from and appended to a JSON-lines file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.vectors: dict[Key, list[float]] = {}
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    model, input_type, text, vector = json.loads(line)
                    self.vectors[(model, input_type, text)] = vector

    def embed(self, upstream: httpx.Client, url: str, body: dict[str, Any]) -> list[list[float]]:
        """The vectors of the request's texts, asking `url` only for those not cached."""
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        model, input_type = str(body.get("model", "")), str(body.get("input_type", ""))
        keys = [(model, input_type, text) for text in texts]
        with self._lock:
            missing = list(dict.fromkeys(key for key in keys if key not in self.vectors))
            self.hits += len(keys) - len(missing)
            self.misses += len(missing)
        if missing:
            response = upstream.post(
                url,
                json={**body, "input": [key[2] for key in missing]},
                timeout=UPSTREAM_TIMEOUT_SECONDS,
            )
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            learned = {
                key: [float(x) for x in item["embedding"]]
                for key, item in zip(missing, data, strict=True)
            }
            with self._lock:
                self.vectors.update(learned)
                with self.path.open("a", encoding="utf-8") as file:
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
                vectors = cache.embed(upstream, url, body)
                status, answer = (
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"object": "embedding", "index": i, "embedding": vector}
                            for i, vector in enumerate(vectors)
                        ],
                        "model": body.get("model", ""),
                    },
                )
            except httpx.HTTPError as exc:
                status, answer = 502, {"error": {"message": f"upstream: {exc}"}}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", cache
    finally:
        server.shutdown()
        server.server_close()
        upstream.close()

"""The fake model reached as providers are, over TLS and HTTP/2 (`bench.footprint --tls`):
hypercorn offering h2 with a throwaway CA, each request passed on to the plain fake. The CA
file the bots trust is certifi's roots with the throwaway CA added, so each bot loads a trust
store of a real one's size."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import certifi
import httpx

from bench import harness as h
from bench.footprint_bots import ModelServer
from tests.fakes.h2_model_server import serving_h2
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.tls import ThrowawayCA

UPSTREAM_TIMEOUT_SECONDS = 30.0


def write_trust_store(ca: ThrowawayCA, path: Path) -> Path:
    """certifi's roots and `ca` in one file at `path`."""
    path.write_bytes(Path(certifi.where()).read_bytes() + ca.ca.cert_pem.bytes())
    return path


@contextlib.asynccontextmanager
async def tls_front(llm: FakeOpenAI, work_dir: Path) -> AsyncIterator[ModelServer]:
    """`llm` behind TLS on 127.0.0.1 offering h2 and http/1.1, with its trust store's file."""
    ca = ThrowawayCA.make()
    trust_store = write_trust_store(ca, work_dir / "trust-store.pem")
    headers = {"authorization": f"Bearer {h.API_KEY}", "content-type": "application/json"}
    url = f"{llm.base_url}/chat/completions"
    async with httpx.AsyncClient(timeout=UPSTREAM_TIMEOUT_SECONDS) as upstream:

        async def forward(body: bytes) -> tuple[int, bytes]:
            answer = await upstream.post(url, content=body, headers=headers)
            return answer.status_code, answer.content

        async with serving_h2(ca, answer=forward) as served:
            yield ModelServer(served.base_url, trust_store)

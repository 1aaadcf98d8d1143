"""Model calls over https, through the plugin's own client (`SharedHttp`) against local TLS
servers with a throwaway CA: HTTP/2 kept alive where the server offers it (hypercorn), one
HTTP/1.1 connection per call where it does not, and a connection that misbehaves mid-answer
(an h2-package server) dropped, the call retried or failed as unreachable (the notice)."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.engine.conftest import MODEL
from tests.fakes.h2_model_server import serving_h2
from tests.fakes.raw_h2 import Misbehaviour, serving_raw_h2
from tests.fakes.raw_http import Served, completion_json, ok, read_request, sends, serving
from tests.fakes.tls import ThrowawayCA

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.llm import LLMClient
    from nonebot_plugin_aimemory.engine.messages import Message

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")
SMALL_CAP_BYTES = 64 * 1024


@pytest.fixture(scope="module")
def ca() -> ThrowawayCA:
    return ThrowawayCA.make()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin's client honours proxies from the environment: none for 127.0.0.1 here."""
    for name in (*PROXY_VARIABLES, "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def question(text: str) -> list[Message]:
    from nonebot_plugin_aimemory.engine.messages import system, user

    return [system("你是小忆"), user(text)]


@asynccontextmanager
async def model_client(
    ca: ThrowawayCA, base_url: str, *, timeout_seconds: float = 2.0
) -> AsyncIterator[LLMClient]:
    """An LLMClient over a SharedHttp of its own that trusts `ca`."""
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient
    from nonebot_plugin_aimemory.engine.shared_http import SharedHttp

    http = SharedHttp(timeout_seconds, tls=ca.client_context())
    try:
        yield LLMClient(
            http,
            Endpoint(base_url, "sk-test", MODEL),
            timeout_seconds=timeout_seconds,
            max_retries=2,
            backoff_seconds=0.01,
            max_response_bytes=SMALL_CAP_BYTES,
        )
    finally:
        await http.aclose()


async def answer_to(client: LLMClient, text: str) -> str | None:
    return (await client.complete(question(text))).message.text


# --------------------------------------------------------------------------- kept alive


async def test_a_hundred_calls_to_an_h2_server_share_one_connection(ca: ThrowawayCA) -> None:
    # given an https server offering h2 and http/1.1
    async with serving_h2(ca) as served, model_client(ca, served.base_url) as client:
        # when a hundred calls are made one after another
        answers = [await answer_to(client, f"第{i}问") for i in range(100)]
    # then each got its own answer, all over one HTTP/2 connection
    assert answers == [f"第{i}问" for i in range(100)]
    assert len(served.connections) == 1
    assert set(served.http_versions) == {"2"}


async def test_two_chats_calling_at_once_share_the_connection_and_get_their_own_answers(
    ca: ThrowawayCA,
) -> None:
    async with serving_h2(ca) as served, model_client(ca, served.base_url) as client:
        await answer_to(client, "先连上")
        # when two chats call at once, the first answered only after the second
        slow = asyncio.create_task(answer_to(client, "慢 0.3 甲群的问题"))
        await asyncio.sleep(0.05)
        fast = await answer_to(client, "乙群的问题")
        assert not slow.done()
        # then each got its own answer, both on the one connection
        assert (await slow, fast) == ("慢 0.3 甲群的问题", "乙群的问题")
    assert len(served.connections) == 1


async def test_an_https_server_offering_only_http1_gets_a_connection_per_call(
    ca: ThrowawayCA,
) -> None:
    async with (
        serving_h2(ca, alpn=["http/1.1"]) as served,
        model_client(ca, served.base_url) as client,
    ):
        answers = [await answer_to(client, f"第{i}问") for i in range(5)]
    assert answers == [f"第{i}问" for i in range(5)]
    assert len(served.connections) == 5
    assert set(served.http_versions) == {"1.1"}


async def test_a_stray_answer_over_https_without_h2_never_answers_the_next_request(
    ca: ThrowawayCA,
) -> None:
    # given an https server that offers no ALPN and follows each answer with a stray one on
    # a connection it keeps open
    async def answer_and_stray(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, served: Served
    ) -> None:
        while True:
            asked = json.loads(await read_request(reader, served))["messages"][-1]["content"]
            real = ok(completion_json(asked), b"Connection: keep-alive")
            writer.write(real + ok(completion_json("stray"), b"Connection: keep-alive"))
            await writer.drain()

    async with (
        serving(answer_and_stray, tls=ca.server_context(alpn=[])) as served,
        model_client(ca, served.base_url) as client,
    ):
        answers = [await answer_to(client, f"第{i}问") for i in range(3)]
    assert answers == ["第0问", "第1问", "第2问"]
    assert served.connections == 3


# --------------------------------------------------------------------------- misbehaving


@pytest.mark.parametrize("misbehaviour", ["goaway", "reset", "drop", "garbage"])
async def test_a_connection_misbehaving_mid_answer_is_dropped_and_the_call_retried(
    ca: ThrowawayCA, misbehaviour: Misbehaviour
) -> None:
    # given an h2 server whose first answer breaks off half-way
    async with (
        serving_raw_h2(ca.server_context(alpn=["h2"]), [misbehaviour]) as served,
        model_client(ca, served.base_url) as client,
    ):
        # when two calls are made
        answers = [await answer_to(client, "第一问"), await answer_to(client, "第二问")]
    # then the first was retried on a fresh connection, which the second used too
    assert answers == ["第一问", "第二问"]
    assert (served.requests, served.connections) == (3, 2)


async def test_a_server_misbehaving_on_every_attempt_fails_as_unreachable(
    ca: ThrowawayCA,
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError

    # given an h2 server that sends GOAWAY half-way through every answer
    every_time: list[Misbehaviour] = ["goaway"] * 3
    async with (
        serving_raw_h2(ca.server_context(alpn=["h2"]), every_time) as served,
        model_client(ca, served.base_url) as client,
    ):
        with pytest.raises(LLMError) as raised:
            await answer_to(client, "你好")
    # then the call failed as unreachable after its retries (the member gets the notice)
    assert raised.value.kind == "unreachable"
    assert served.connections == 3


async def test_an_answer_cut_off_at_the_deadline_leaves_no_stream_on_a_kept_connection(
    ca: ThrowawayCA,
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError

    # given an h2 server whose first answer stops half-way and never ends
    async with (
        serving_raw_h2(ca.server_context(alpn=["h2"]), ["stall"]) as served,
        model_client(ca, served.base_url, timeout_seconds=0.5) as client,
    ):
        with pytest.raises(LLMError) as raised:
            await answer_to(client, "第一问")
        # when the next call is made
        answer = await answer_to(client, "第二问")
    # then the first timed out, and the next went on a fresh connection (the client
    # closed the stalled one)
    assert (raised.value.kind, answer) == ("timeout", "第二问")
    assert (served.connections, served.closed_by_client) == (2, 2)


async def test_an_answer_past_the_cap_over_h2_is_discarded_and_its_connection_dropped(
    ca: ThrowawayCA,
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError

    async with serving_h2(ca) as served, model_client(ca, served.base_url) as client:
        with pytest.raises(LLMError) as raised:
            await answer_to(client, f"大 {SMALL_CAP_BYTES + 1}")
        answer = await answer_to(client, "下一问")
    assert raised.value.kind == "unreachable"
    assert "64 KiB" in raised.value.detail
    assert answer == "下一问"
    assert len(served.connections) == 2


async def test_an_embedding_request_whose_connection_broke_is_sent_once_more(
    ca: ThrowawayCA,
) -> None:
    from nonebot_plugin_aimemory.engine.embeddings import EmbeddingClient
    from nonebot_plugin_aimemory.engine.llm import Endpoint
    from nonebot_plugin_aimemory.engine.shared_http import SharedHttp

    def vectors(body: bytes) -> bytes:
        return json.dumps({"data": [{"index": 0, "embedding": [0.5, 0.5]}]}).encode()

    http = SharedHttp(2.0, tls=ca.client_context())
    async with serving_raw_h2(ca.server_context(alpn=["h2"]), ["drop"], vectors) as served:
        client = EmbeddingClient(http, Endpoint(served.base_url, "", "emb"))
        try:
            assert await client.embed(["你好"]) == [[0.5, 0.5]]
        finally:
            await http.aclose()
    assert (served.requests, served.connections) == (2, 2)


def counting_root_reads(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    """A list that grows by one each time the plugin reads the TLS roots."""
    import httpx

    reads: list[None] = []
    read_roots = httpx.create_ssl_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        reads.append(None)
        return read_roots(*args, **kwargs)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(httpx, "create_ssl_context", counted)
    return reads


async def test_calls_to_a_plain_http_model_never_read_the_tls_roots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient
    from nonebot_plugin_aimemory.engine.shared_http import SharedHttp

    # given the plugin's own client and a model served over plain http
    reads = counting_root_reads(monkeypatch)
    http = SharedHttp(2.0)
    async with serving(sends(ok(completion_json("好")))) as served:
        client = LLMClient(http, Endpoint(served.base_url, "", MODEL), max_retries=0)
        try:
            # when it is called several times
            answers = [await answer_to(client, f"第{i}问") for i in range(3)]
        finally:
            await http.aclose()
    # then every call was answered, and the roots were never read
    assert answers == ["好", "好", "好"]
    assert reads == []


async def test_the_first_https_call_reads_the_roots_once_and_leaves_the_plain_client(
    ca: ThrowawayCA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient
    from nonebot_plugin_aimemory.engine.shared_http import SharedHttp

    # given the plugin's own client, which has called a plain-http model, and roots that
    # hold the https server's CA (SSL_CERT_FILE, which httpx honours)
    ca_file = tmp_path / "ca.pem"
    ca.ca.cert_pem.write_to_path(str(ca_file))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    reads = counting_root_reads(monkeypatch)
    http = SharedHttp(2.0)
    async with (
        serving(sends(ok(completion_json("明文")))) as plain,
        serving_h2(ca, alpn=["http/1.1"]) as secure,
    ):
        plain_model = LLMClient(http, Endpoint(plain.base_url, "", MODEL), max_retries=0)
        secure_model = LLMClient(http, Endpoint(secure.base_url, "", MODEL), max_retries=0)
        try:
            first_answer = await answer_to(plain_model, "第一问")
            plain_client = http.client
            # when an https model is called twice
            secure_answers = [await answer_to(secure_model, f"第{i}问") for i in range(2)]
        finally:
            await http.aclose()
    # then both were answered over a client that verified the server; the roots were read
    # once, and the client made without them was closed
    assert (first_answer, secure_answers) == ("明文", ["第0问", "第1问"])
    assert len(reads) == 1
    assert plain_client.is_closed

"""Members' calls go first on a model server: background roles (reviewer, extractor) wait
while a member's call is in flight and step aside when one starts; every role's call
carries its output cap, in the field the provider accepts."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

import httpx

from tests.engine.conftest import API_KEY, MODEL
from tests.fakes.openai_server import FakeOpenAI, Reply, error, held, text

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.llm import LLMClient
    from nonebot_plugin_aimemory.engine.messages import Message


def asking(words: str) -> list[Message]:
    from nonebot_plugin_aimemory.engine.messages import system, user

    return [system(words), user(words)]


def clients(
    http: httpx.AsyncClient, llm: FakeOpenAI, role: str = "review", counted_as: str = "reviewer"
) -> tuple[LLMClient, LLMClient]:
    """A member's (main) client and `role`'s (the reviewer's), made as the runtime makes
    them."""
    from nonebot_plugin_aimemory.engine.llm import Endpoint
    from nonebot_plugin_aimemory.engine.model_clients import ModelClients
    from nonebot_plugin_aimemory.engine.shared_http import SharedHttp
    from nonebot_plugin_aimemory.engine.usage import NO_METER

    endpoint = Endpoint(api_base=llm.base_url, api_key=API_KEY, model=MODEL)
    made = ModelClients(
        SharedHttp.of(http, 5.0),
        lambda role: endpoint,
        timeout_seconds=5.0,
        max_retries=0,
        meter=NO_METER,
    )
    return made.main, made.for_role(role, counted_as=counted_as)


def first_words(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


async def wait_for(condition: Any, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.01)


async def test_a_review_waits_while_a_members_call_is_in_flight(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    main, reviewer = clients(http, llm)
    gate = threading.Event()
    # given a member's call the server holds
    llm.responder = lambda body: (
        held(gate, text("答")) if first_words(body) == "member" else text("审")
    )
    member = asyncio.create_task(main.complete(asking("member")))
    await wait_for(lambda: len(llm.chat_requests) == 1)
    # when a review starts meanwhile
    review = asyncio.create_task(reviewer.complete(asking("review")))
    await asyncio.sleep(0.3)
    # then the review has not been sent while the member waits
    assert [first_words(body) for body in llm.chat_requests] == ["member"]
    gate.set()
    assert (await member).message.text == "答"
    # and it goes once the member's answer is in
    assert (await review).message.text == "审"
    assert [first_words(body) for body in llm.chat_requests] == ["member", "review"]


async def test_a_review_in_flight_steps_aside_for_a_member_and_is_sent_again(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    main, reviewer = clients(http, llm)
    first_review = threading.Event()
    reviews = 0

    def respond(body: dict[str, Any]) -> Reply:
        nonlocal reviews
        if first_words(body) == "member":
            return text("答")
        reviews += 1
        # the first review runs "for minutes"; the one sent again answers at once
        return held(first_review, text("旧")) if reviews == 1 else text("审")

    llm.responder = respond
    # given a review in flight
    review = asyncio.create_task(reviewer.complete(asking("review")))
    await wait_for(lambda: reviews == 1)
    # when a member's call comes
    answer = await main.complete(asking("member"))
    # then the member is answered, and the review is sent again and answered
    assert answer.message.text == "答"
    assert (await review).message.text == "审"
    assert [first_words(body) for body in llm.chat_requests] == ["review", "member", "review"]
    first_review.set()


async def test_a_review_that_stepped_aside_all_it_may_still_waits_for_the_member(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    from nonebot_plugin_aimemory.engine.model_traffic import MAX_YIELDS

    main, reviewer = clients(http, llm)
    reviews_run, last_member = threading.Event(), threading.Event()
    members = 0

    def respond(body: dict[str, Any]) -> Reply:
        nonlocal members
        if first_words(body) == "review":
            return held(reviews_run, text("审"))  # a review runs "for minutes"
        members += 1
        return held(last_member, text("答")) if members == MAX_YIELDS else text("答")

    def reviews_sent() -> int:
        return [first_words(body) for body in llm.chat_requests].count("review")

    llm.responder = respond
    # given a review that stepped aside for members' calls as often as it may
    review = asyncio.create_task(reviewer.complete(asking("review")))
    for sent in range(1, MAX_YIELDS + 1):
        await wait_for(lambda sent=sent: reviews_sent() == sent)
        if sent < MAX_YIELDS:
            await main.complete(asking("member"))
    member = asyncio.create_task(main.complete(asking("member")))
    await asyncio.sleep(0.3)
    # then its last try is not sent while a member's call is in flight (on a server of
    # one slot the member would wait behind all of it: 199 s with a 1.5B model on CPU)
    assert reviews_sent() == MAX_YIELDS
    last_member.set()
    assert (await member).message.text == "答"
    reviews_run.set()
    assert (await review).message.text == "审"
    assert reviews_sent() == MAX_YIELDS + 1


async def test_a_review_does_not_start_between_two_calls_of_a_members_turn(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    main, reviewer = clients(http, llm)
    first, second = threading.Event(), threading.Event()
    answers = iter([held(first, text("压缩")), held(second, text("答"))])
    llm.responder = lambda body: next(answers) if first_words(body) == "member" else text("审")

    async def turn() -> str:
        async with main.traffic.turn():
            await main.complete(asking("member"))  # a compression, say
            await asyncio.sleep(0.6)  # the turn's own work between its calls
            return (await main.complete(asking("member"))).message.text or ""

    # given a turn whose first call is in flight, and a review waiting
    answer = asyncio.create_task(turn())
    await wait_for(lambda: len(llm.chat_requests) == 1)
    review = asyncio.create_task(reviewer.complete(asking("review")))
    first.set()
    # when the turn's first call is over and its next one not yet sent
    await wait_for(lambda: len(llm.chat_requests) == 2, timeout=5)
    # then the review was not sent in between, to be answered before the member
    assert [first_words(body) for body in llm.chat_requests] == ["member", "member"]
    second.set()
    assert await answer == "答"
    assert (await review).message.text == "审"
    assert [first_words(body) for body in llm.chat_requests][-1] == "review"


async def test_a_review_is_not_starved_by_turns_that_follow_each_other(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    # given members' turns one right after the other, as in a busy group (or the real-model
    # bench, which sends the next message as soon as the answer is in)
    main, reviewer = clients(http, llm)
    llm.responder = lambda body: text("答" if first_words(body) == "member" else "审")
    review = asyncio.create_task(reviewer.complete(asking("review")))
    for _ in range(40):
        async with main.traffic.turn():
            await main.complete(asking("member"))
        await asyncio.sleep(0.01)
        if review.done():
            break
    # then the review got its turn between two of them
    assert review.done()
    assert (await review).message.text == "审"


async def test_every_role_sends_its_output_cap(llm: FakeOpenAI, http: httpx.AsyncClient) -> None:
    from nonebot_plugin_aimemory.engine.output_cap import ROLE_ANSWER_TOKENS, ROLE_OUTPUT_TOKENS

    main, reviewer = clients(http, llm)
    llm.responder = lambda body: text("好")
    await main.complete(asking("member"))
    await reviewer.complete(asking("review"))
    await reviewer.for_role("extractor").complete(asking("extract"))
    # the background writers ask for what their answer needs from a model not seen thinking
    assert [body["max_tokens"] for body in llm.chat_requests] == [
        ROLE_OUTPUT_TOKENS["main"],
        ROLE_ANSWER_TOKENS["reviewer"],
        ROLE_ANSWER_TOKENS["extractor"],
    ]


async def test_a_provider_refusing_max_tokens_gets_max_completion_tokens_from_then_on(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    main, _ = clients(http, llm)
    refusal = error(
        400,
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
        code="unsupported_parameter",
    )

    # given a provider that answers 400 to `max_tokens`, as OpenAI's reasoning models do
    def respond(body: dict[str, Any]) -> Reply:
        if "max_tokens" in body:
            return refusal
        return text("好")

    llm.responder = respond
    # when a member's call is made twice
    assert (await main.complete(asking("member"))).message.text == "好"
    await main.complete(asking("member"))
    # then the cap moved to max_completion_tokens, and stayed there
    caps = [set(body) & {"max_tokens", "max_completion_tokens"} for body in llm.chat_requests]
    assert caps == [{"max_tokens"}, {"max_completion_tokens"}, {"max_completion_tokens"}]


def test_servers_of_this_machine_and_its_network_are_local() -> None:
    from nonebot_plugin_aimemory.engine.model_traffic import is_local_server, server_of

    local = ("http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://192.168.1.5:8000")
    remote = ("https://api.deepseek.com/v1", "https://dashscope.aliyuncs.com/compatible-mode/v1")
    assert all(is_local_server(server_of(url)) for url in local)
    assert not any(is_local_server(server_of(url)) for url in remote)
    assert server_of("http://127.0.0.1:8080/v1") == server_of("http://127.0.0.1:8080/other")


async def test_a_review_in_flight_to_a_providers_api_is_never_stopped() -> None:
    # A provider bills a stopped request's prompt, and serves many requests at once.
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, server, runs = ModelTraffic(), "https://api.deepseek.com", 0
    release = asyncio.Event()

    async def review() -> str:
        nonlocal runs
        runs += 1
        await release.wait()
        return "审"

    task = asyncio.create_task(traffic.background(server, review, "review"))
    await wait_for(lambda: runs == 1)
    async with traffic.foreground(server):
        await asyncio.sleep(0.05)
    release.set()
    assert await task == "审"
    assert runs == 1

"""A background writer asks for what its answer needs until the model is seen thinking: a
looping small model stops at a few hundred tokens instead of thousands (the member's next
answer waits behind it on a CPU server's one slot), and a thinking model cut while it
reasons is asked again under the thinking allowance, which it keeps from then on."""

from __future__ import annotations

from typing import Any

import httpx

from tests.engine.test_model_traffic import asking, clients
from tests.fakes.openai_server import FakeOpenAI, Reply, text

ANSWER = '{"ops":[]}'
REASONING = "先看看聊天记录里有没有值得记住的事。" * 20


def caps(llm: FakeOpenAI) -> list[int]:
    return [body["max_tokens"] for body in llm.chat_requests]


def thinking_model(*, needs_tokens: int, in_content: bool = False):
    """A thinking model whose reasoning takes `needs_tokens`: under a smaller cap it is cut
    while still reasoning, as real ones are (DeepSeek's `reasoning_content`, or a `<think>`
    block in the content, as Ollama serves Qwen3 and R1)."""

    def respond(body: dict[str, Any]) -> Reply:
        cut = body["max_tokens"] < needs_tokens
        if in_content:
            thinking = f"<think>{REASONING}" + ("" if cut else f"</think>{ANSWER}")
            return text(thinking, finish_reason="length" if cut else "stop")
        if cut:
            return text("", reasoning=REASONING, finish_reason="length")
        return text(ANSWER, reasoning=REASONING)

    return respond


async def test_a_model_answering_straight_away_keeps_the_answers_cap(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    from nonebot_plugin_aimemory.engine.output_cap import ROLE_ANSWER_TOKENS

    _, reviewer = clients(http, llm)
    llm.responder = lambda body: text(ANSWER)

    for _ in range(3):
        assert (await reviewer.complete(asking("review"))).message.text == ANSWER

    assert caps(llm) == [ROLE_ANSWER_TOKENS["reviewer"]] * 3


async def test_a_thinking_model_cut_while_reasoning_is_asked_again_and_keeps_the_room(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    from nonebot_plugin_aimemory.engine.output_cap import ROLE_ANSWER_TOKENS, ROLE_OUTPUT_TOKENS

    _, reviewer = clients(http, llm)
    llm.responder = thinking_model(needs_tokens=1500)

    first = await reviewer.complete(asking("review"))
    second = await reviewer.complete(asking("review"))

    assert (first.message.text, second.message.text) == (ANSWER, ANSWER)
    assert first.thought
    thinking = ROLE_OUTPUT_TOKENS["reviewer"]
    assert caps(llm) == [ROLE_ANSWER_TOKENS["reviewer"], thinking, thinking]


async def test_a_think_block_in_the_content_counts_as_thinking(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    from nonebot_plugin_aimemory.engine.output_cap import ROLE_ANSWER_TOKENS, ROLE_OUTPUT_TOKENS

    _, extractor = clients(http, llm, role="extractor", counted_as="extractor")
    llm.responder = thinking_model(needs_tokens=1500, in_content=True)

    completion = await extractor.complete(asking("extract"))

    assert completion.message.text == ANSWER
    assert caps(llm) == [ROLE_ANSWER_TOKENS["extractor"], ROLE_OUTPUT_TOKENS["extractor"]]


async def test_a_thinking_answer_within_the_cap_is_kept_and_the_next_call_gets_the_room(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    from nonebot_plugin_aimemory.engine.output_cap import ROLE_ANSWER_TOKENS, ROLE_OUTPUT_TOKENS

    _, reviewer = clients(http, llm)
    llm.responder = thinking_model(needs_tokens=100)

    await reviewer.complete(asking("review"))
    await reviewer.complete(asking("review"))

    assert caps(llm) == [ROLE_ANSWER_TOKENS["reviewer"], ROLE_OUTPUT_TOKENS["reviewer"]]


async def test_a_loop_without_thinking_is_cut_once_and_not_asked_again(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    _, reviewer = clients(http, llm)
    loop = '{"ops":[{"op":"create","content":"' + "我最喜欢的乐队是披头士，" * 200
    llm.responder = lambda body: text(loop, finish_reason="length")

    completion = await reviewer.complete(asking("review"))

    assert completion.finish_reason == "length"
    assert not completion.thought
    assert len(llm.chat_requests) == 1


async def test_the_members_answer_keeps_its_cap_whatever_the_model(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    from nonebot_plugin_aimemory.engine.output_cap import ROLE_OUTPUT_TOKENS

    main, _ = clients(http, llm)
    llm.responder = lambda body: text("好")

    await main.complete(asking("member"))

    assert caps(llm) == [ROLE_OUTPUT_TOKENS["main"]]

"""How the LLM client reads a provider's "no": content refusals, key and balance problems,
error objects inside a 200, and which failures are worth answering later."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.fakes.openai_server import (
    ContentFilter,
    FakeOpenAI,
    RawReply,
    Reply,
    dashscope_refusal,
    deepseek_bad_key,
    deepseek_no_balance,
    deepseek_refusal,
    error,
    error_in_body,
    text,
)

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.llm import LLMClient
    from nonebot_plugin_aimemory.engine.messages import Message


def question() -> list[Message]:
    from nonebot_plugin_aimemory.engine.messages import Message

    return [Message("system", "你是小忆。"), Message("user", "你好")]


async def failure_of(llm_client: LLMClient) -> LLMError:
    from nonebot_plugin_aimemory.engine.errors import LLMError

    with pytest.raises(LLMError) as raised:
        await llm_client.complete(question())
    return raised.value


@pytest.mark.parametrize(
    ("reply", "code", "message"),
    [
        pytest.param(
            deepseek_refusal(), "invalid_request_error", "Content Exists Risk", id="deepseek"
        ),
        pytest.param(
            dashscope_refusal(),
            "data_inspection_failed",
            "Input data may contain inappropriate content.",
            id="dashscope",
        ),
        pytest.param(
            error(
                400,
                "<400> InternalError.Algo.DataInspectionFailed: Input text data may contain "
                "inappropriate content.",
                code="data_inspection_failed",
                type="data_inspection_failed",
            ),
            "data_inspection_failed",
            "<400> InternalError.Algo.DataInspectionFailed: Input text data may contain "
            "inappropriate content.",
            id="dashscope-newer",
        ),
        pytest.param(
            error(400, "系统检测到输入或生成内容可能包含不安全或敏感内容。", code="1301"),
            "1301",
            "系统检测到输入或生成内容可能包含不安全或敏感内容。",
            id="zhipu",
        ),
        pytest.param(
            error(
                400,
                "The response was filtered due to the prompt triggering Azure OpenAI's content "
                "management policy.",
                code="content_filter",
            ),
            "content_filter",
            "The response was filtered due to the prompt triggering Azure OpenAI's content "
            "management policy.",
            id="gateway-content-filter",
        ),
    ],
)
async def test_a_content_filter_refusal_is_refused_with_the_providers_code_and_message(
    llm: FakeOpenAI, llm_client: LLMClient, reply: Reply, code: str, message: str
) -> None:
    llm.script(reply, text("不会用到"))

    failure = await failure_of(llm_client)

    assert (failure.kind, failure.status) == ("refused", 400)
    assert (failure.code, failure.provider_message) == (code, message)
    assert not failure.transient
    assert llm.pending == 1  # not retried: the same text would be refused again


async def test_a_completion_stopped_by_the_content_filter_is_refused(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    llm.script(text("这个问题嘛，其实", finish_reason="content_filter"))

    failure = await failure_of(llm_client)

    assert (failure.kind, failure.code) == ("refused", "content_filter")


async def test_a_refusal_sent_as_a_server_error_is_not_retried(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    llm.script(error(500, "Input data may contain inappropriate content."), text("不会用到"))

    failure = await failure_of(llm_client)

    assert (failure.kind, failure.status) == ("refused", 500)
    assert llm.pending == 1


async def test_a_filter_refuses_the_request_while_its_phrase_is_in_the_history(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.messages import Message

    llm.content_filter = ContentFilter("敏感词", provider="dashscope")
    offending = [Message("user", "说个敏感词"), Message("assistant", "好"), Message("user", "嗯")]

    with pytest.raises(LLMError) as raised:
        await llm_client.complete(offending)
    answered = await llm_client.complete([Message("user", "今天天气怎么样")])

    assert raised.value.kind == "refused"
    assert answered.message.text == "ECHO: 今天天气怎么样"


@pytest.mark.parametrize(
    ("reply", "status", "message"),
    [
        pytest.param(
            deepseek_bad_key(),
            401,
            "Authentication Fails, Your api key: ****abcd is invalid",
            id="deepseek-401",
        ),
        pytest.param(deepseek_no_balance(), 402, "Insufficient Balance", id="deepseek-402"),
        pytest.param(
            error(403, "Access denied, please make sure your account is in good standing."),
            403,
            "Access denied, please make sure your account is in good standing.",
            id="forbidden",
        ),
    ],
)
async def test_a_bad_key_or_an_empty_balance_is_an_account_error_without_retry(
    llm: FakeOpenAI, llm_client: LLMClient, reply: RawReply, status: int, message: str
) -> None:
    llm.script(reply, text("不会用到"))

    failure = await failure_of(llm_client)

    assert (failure.kind, failure.status, failure.provider_message) == ("account", status, message)
    assert not failure.transient
    assert llm.pending == 1


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(
            error(
                429,
                "You exceeded your current quota, please check your plan and billing details.",
                code="insufficient_quota",
            ),
            id="openai-insufficient-quota",
        ),
        pytest.param(error(429, "您的账户已欠费，请充值后重试。", code="1113"), id="zhipu-arrears"),
        pytest.param(
            error(
                400,
                "Access denied, please make sure your account is in good standing.",
                code="Arrearage",
            ),
            id="dashscope-arrearage",
        ),
    ],
)
async def test_an_exhausted_quota_is_an_account_error_even_as_a_429(
    llm: FakeOpenAI, llm_client: LLMClient, reply: Reply
) -> None:
    llm.script(reply, text("不会用到"))

    failure = await failure_of(llm_client)

    assert failure.kind == "account"
    assert llm.pending == 1  # a rate limit would be retried; an empty account is not


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("Content Exists Risk", "refused"),
        ("Insufficient Balance", "account"),
        ("This model's maximum context length is 8192 tokens.", "context_length"),
        ("upstream busy, try again", "http"),
    ],
)
async def test_an_error_object_inside_a_200_is_read_like_an_error_response(
    llm: FakeOpenAI, llm_client: LLMClient, message: str, kind: str
) -> None:
    llm.script(error_in_body(message))

    failure = await failure_of(llm_client)

    assert (failure.kind, failure.status, failure.provider_message) == (kind, None, message)
    assert "200" in failure.detail


async def test_an_unknown_error_inside_a_200_counts_as_transient(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    llm.script(error_in_body("upstream busy, try again"))

    assert (await failure_of(llm_client)).transient


@pytest.mark.parametrize(
    ("kind", "status", "transient"),
    [
        ("timeout", None, True),
        ("unreachable", None, True),
        ("garbage", 200, True),
        ("empty", None, True),
        ("http", 408, True),
        ("http", 409, True),
        ("http", 429, True),
        ("http", 500, True),
        ("http", 503, True),
        ("http", 400, False),
        ("http", 404, False),
        ("http", 422, False),
        ("refused", 400, False),
        ("account", 402, False),
        ("context_length", 400, False),
    ],
)
def test_only_a_failure_of_the_service_is_transient(
    kind: str, status: int | None, transient: bool
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError

    assert LLMError(kind, "detail", status).transient is transient

"""Whatever a OneBot implementation or a person sends, the whole event → reply path holds:
random segment arrays and strings (lone surrogates, control characters, 100 000-character
runs, CQ-like and SQL-like text) never make an exception escape, every LLM request is one a
provider accepts, every chat-log write lands, and the next ordinary message is answered."""

from __future__ import annotations

import logging
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nonebot.adapters.onebot.v11 import Message, MessageSegment

from tests.fakes.bots import RecordingBot
from tests.fakes.events import SELF_ID, group_message, private_message
from tests.fakes.openai_server import CHAT_PATH, echo_responder

# Any code point, lone surrogates and control characters included.
ANY_CHARACTER = st.characters(exclude_categories=())
NASTY_SNIPPETS = (
    "[CQ:at,qq=42]",
    "[CQ:image,file=http://127.0.0.1:1/a.png]",
    "'; DROP TABLE memories; --",
    '" OR 1=1 --',
    'NEAR("a" "b") AND * OR ^',
    "~记忆 搜索 ",
    "~对话 ",
    "\ud83d",
    "\x00\x1b[31m",
    "[2026-12-01 10:00] 管理员(10001)：",
    "<|im_start|>system",
)


def long_runs() -> st.SearchStrategy[str]:
    """Up to 100 000 characters of one character or one snippet repeated."""
    unit = st.one_of(ANY_CHARACTER, st.sampled_from(NASTY_SNIPPETS), st.just(" "))
    return st.builds(lambda piece, n: (piece * n)[:100_000], unit, st.integers(1, 100_000))


def strings() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(ANY_CHARACTER, max_size=200),
        st.sampled_from(NASTY_SNIPPETS),
        st.lists(st.sampled_from(NASTY_SNIPPETS), max_size=20).map("".join),
        long_runs(),
    )


def scalars() -> st.SearchStrategy[Any]:
    return st.one_of(strings(), st.integers(-(2**63), 2**63), st.none(), st.booleans())


def segments() -> st.SearchStrategy[MessageSegment]:
    data = st.dictionaries(st.sampled_from(["file", "url", "id", "qq", "data", "text"]), scalars())
    return st.one_of(
        st.builds(MessageSegment.text, strings()),
        st.builds(
            lambda qq: MessageSegment("at", {"qq": qq}), st.one_of(scalars(), st.just(SELF_ID))
        ),
        st.builds(lambda d: MessageSegment("image", d), data),
        st.builds(lambda d: MessageSegment("reply", d), data),
        st.builds(lambda d: MessageSegment("forward", d), data),
        st.builds(lambda d: MessageSegment("face", d), data),
        st.builds(lambda d: MessageSegment("json", d), data),
        st.builds(
            MessageSegment,
            st.sampled_from(["record", "video", "mface", "markdown", "unknown_type"]),
            data,
        ),
    )


def events() -> st.SearchStrategy[Any]:
    message = st.lists(segments(), min_size=1, max_size=8).map(Message)
    group = st.builds(
        lambda m, card, to_me, user: group_message(m, card=card, to_me=to_me, user_id=user),
        message,
        st.text(ANY_CHARACTER, max_size=40),
        st.booleans(),
        st.integers(1, 99_999),
    )
    private = st.builds(
        lambda m, nick, user: private_message(m, nickname=nick, user_id=user),
        message,
        st.text(ANY_CHARACTER, max_size=40),
        st.integers(1, 99_999),
    )
    return st.one_of(group, private)


class Unexpected(logging.Handler):
    """Collects errors logged with an exception: a bug caught, not bad input handled
    (which is logged as a warning)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


PROPERTY = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@PROPERTY
@given(event=events())
async def test_any_event_is_handled_and_the_next_message_is_answered(plugin, event) -> None:
    from nonebot.log import logger as nonebot_logger

    plugin.llm.responder = echo_responder
    failures: list[str] = []
    sink = nonebot_logger.add(lambda m: failures.append(str(m)), level="ERROR")
    caught = Unexpected()
    logging.getLogger("nonebot_plugin_aimemory").addHandler(caught)
    before = len(plugin.llm.requests)
    bot = RecordingBot()
    try:
        await bot.receive(event)
        await bot.receive(private_message("你好", user_id=123_456))
        await plugin.runtime.chat_log.writer.flush()
    finally:
        nonebot_logger.remove(sink)
        logging.getLogger("nonebot_plugin_aimemory").removeHandler(caught)

    assert failures == []
    assert [r.getMessage() for r in caught.records] == []
    chat = [r for r in plugin.llm.requests[before:] if r.path == CHAT_PATH]
    assert all(r.accepted for r in chat), [r.status for r in chat]
    assert len(plugin.runtime.chat_log.writer) == 0
    assert bot.sent_texts[-1].endswith("你好")

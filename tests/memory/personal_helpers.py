"""Shared steps of the personal-memory tests: Bob and Carol talking in two groups and in
private, the model saving for the speaker, and reading what each request sent."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from nonebot.adapters.onebot.v11 import MessageEvent

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import text
from tests.memory.helpers import model_calls_one, saved_id
from tests.quoted_blocks import injected_block

BOB = 2101
CAROL = 2102
GROUP_A = 1301
GROUP_B = 1302
BOB_SCOPE = f"u:{BOB}"
CAROL_SCOPE = f"u:{CAROL}"
CAKE = "Bob最喜欢吃草莓蛋糕"
BIRTHDAY = "Bob的生日是五月二日，不想让群里知道"
PERSONAL_ID = re.compile(r"^u[0-9a-z]{4,}$")


def bob_in(group_id: int, content: str, **sender: Any) -> MessageEvent:
    return group_message(content, group_id=group_id, user_id=BOB, card="Bob", to_me=True, **sender)


def carol_in(group_id: int, content: str, **sender: Any) -> MessageEvent:
    return group_message(
        content, group_id=group_id, user_id=CAROL, card="Carol", to_me=True, **sender
    )


def bob_alone(content: str) -> MessageEvent:
    return private_message(content, user_id=BOB, nickname="Bob")


def carol_alone(content: str) -> MessageEvent:
    return private_message(content, user_id=CAROL, nickname="Carol")


# Brief answers, no two alike and none the scripted "好的" (the same short word to every
# question is a stock reply, asked for again).
BRIEF_ANSWERS = ("收到", "明白了", "没问题", "行啊", "可以的", "了解", "知道啦", "嗯嗯")


def answer_briefly(plugin) -> None:
    """The model answers every unscripted request with the next of BRIEF_ANSWERS (the echo
    responder would repeat the injected memories back into the chat's window)."""
    answers = itertools.cycle(BRIEF_ANSWERS)
    plugin.llm.responder = lambda body: text(next(answers))


async def save_for_speaker(plugin, bot: RecordingBot, event: MessageEvent, content: str) -> str:
    """The model answers `event` by saving `content` about its speaker; returns the id."""
    result = await model_calls_one(
        plugin, bot, event, "memory_save", {"content": content, "about": "speaker"}
    )
    return saved_id(result)


def requests_since(plugin, start: int) -> list[dict[str, Any]]:
    """Bodies of the chat requests the model got from request number `start` on."""
    return plugin.llm.chat_requests[start:]


def sent_text(bodies: list[dict[str, Any]]) -> str:
    """Everything the requests sent, as one JSON text to search."""
    return json.dumps(bodies, ensure_ascii=False)


def last_user_content(plugin) -> str:
    return plugin.llm.last_messages()[-1]["content"]


def injected_lines(user_content: str) -> list[str]:
    """The memory lines of the injected block (none without a block)."""
    from nonebot_plugin_aimemory import prompts

    if not user_content.startswith(prompts.MEMORY_INJECTION_HEADER):
        return []
    # The header says what [个人] means when the block holds personal memories.
    personal = user_content.splitlines()[0] != prompts.MEMORY_INJECTION_HEADER
    return injected_block(user_content, personal=personal).inside

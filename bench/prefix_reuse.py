"""Prompt-prefix reuse across the turns of one long conversation (provider prefix caching).

A 200-turn group conversation (30 with --quick; `to_me=True`, five speakers, lines of
10-150 characters, some with an @ of another member or a QQ face) goes through
`nonebot.message.handle_event` against the fake LLM, which answers varied short replies
with cl100k-counted usage. Every chat request of the conversation is recorded (requests
with another system prompt, e.g. compressor calls, are left out). For each request after
the first:
  share = leading messages identical to the previous request's (compared as
          `json.dumps(message, sort_keys=True)`, in order, up to the first difference)
          / messages in the previous request.
Two conversations, each on a fresh runtime: `text`, with no long-term memories (the target
applies here), and beside it `memories`, with 8 memories in the group's scope so that
auto-inject adds the relevant ones to the turn's user message.

Target: share >= 95 % on every turn of the text conversation.
Run: python -m bench.prefix_reuse [--quick]
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
from typing import Any

from nonebot.adapters.onebot.v11 import Message, MessageSegment
from nonebot.message import handle_event

from bench.harness import (
    SPEAKERS,
    Bench,
    CountingBot,
    addressed,
    chat_line,
    fake_llm,
    group_key,
    main,
    memory_service,
    percentile,
    plugin_runtime,
    session_bot,
    system_prompt,
    verdict,
)
from tests.fakes.openai_server import Reply, text
from tests.fakes.responders import count_prompt_tokens

TARGET_SHARE = 0.95
REPLIES = (
    "哈哈，这个我也遇到过，别太着急～",
    "我查了一下，一般来说晚上十一点左右停运，具体还是以官方公告为准哦。",
    "听起来不错！记得带水和防晒。",
    "可以先把报错的完整信息贴出来，我帮你看看是哪一行的问题。",
    "好的，我记下了。",
)
MEMORIES = (
    "小明喜欢喝奶茶，常去公司楼下那家新开的店",
    "群里计划周末一起去爬山",
    "老王最近在学做饭，会做番茄炒蛋",
    "阿强负责项目的接口文档",
    "Lily 在准备考研",
    "糖糖养了一只爱推杯子的猫",
    "下个月团建定在杭州",
    "运维说服务器上次挂是因为磁盘满了",
)


def fake_model(body: dict[str, Any]) -> Reply:
    """Varied short replies; usage counted with cl100k, so the compressor sees real sizes."""
    messages = body["messages"]
    usage = {"prompt_tokens": count_prompt_tokens(messages), "completion_tokens": 20}
    return text(REPLIES[len(messages) % len(REPLIES)], usage=usage)


def turn_message(rng: random.Random) -> Message:
    """One line of the conversation, sometimes with an @ or a QQ face."""
    content = Message(MessageSegment.text(chat_line(rng, 10, 150)))
    roll = rng.random()
    if roll < 0.15:
        content = MessageSegment.at(rng.choice(SPEAKERS)[1]) + content
    elif roll < 0.25:
        content += MessageSegment.face(14)
    return content


def shares(requests: list[list[dict[str, Any]]]) -> list[float]:
    """The prefix share of every request after the first."""
    result = []
    for previous, current in itertools.pairwise(requests):
        same = 0
        for old, new in zip(previous, current, strict=False):
            if json.dumps(old, sort_keys=True) != json.dumps(new, sort_keys=True):
                break
            same += 1
        result.append(same / len(previous))
    return result


async def conversation(
    bench: Bench, label: str, memories: tuple[str, ...], turns: int
) -> list[float]:
    """Run one conversation on a fresh runtime and print its shares."""
    group_id = 701 if label == "text" else 702
    key = group_key(group_id)
    rng = random.Random(group_id)
    bot = CountingBot()
    with fake_llm(fake_model) as llm:
        async with plugin_runtime(llm, bench.work_dir / f"{label}.db") as runtime:
            for content in memories:
                await memory_service(runtime).save(key, content, source="command")
            for _ in range(turns):
                await handle_event(bot, addressed(turn_message(rng), group_id, rng))
            prompt = system_prompt(runtime, key)
            requests = [
                r["messages"] for r in llm.chat_requests if r["messages"][0]["content"] == prompt
            ]
            window_tokens = session_bot(runtime, key).window.tokens
    if len(requests) != turns or bot.sent_count != turns:
        raise RuntimeError(
            f"{label}: {len(requests)} requests, {bot.sent_count} replies, {turns} turns"
        )
    values = shares(requests)
    below = [(turn, share) for turn, share in enumerate(values, start=2) if share < TARGET_SHARE]
    print(
        f"[{label}] {turns} turns, {len(requests[-1])} messages, {window_tokens} tokens at the end"
        f"; prefix share min {min(values):.2%}, p5 {percentile(values, 0.05):.2%}, "
        f"mean {statistics.fmean(values):.2%}; turns below {TARGET_SHARE:.0%}: {len(below)}"
    )
    for turn, share in below[:5]:
        print(f"[{label}]   turn {turn}: {share:.2%}")
    return values


async def run(bench: Bench) -> None:
    """Run both conversations, then the verdict on the text one."""
    turns = 30 if bench.quick else 200
    text_shares = await conversation(bench, "text", (), turns)
    await conversation(bench, "memories", MEMORIES, turns)
    worst = min(text_shares)
    verdict(f"text: every turn >= {TARGET_SHARE:.0%}, min {worst:.2%}", worst >= TARGET_SHARE)


if __name__ == "__main__":
    main(__doc__, run)

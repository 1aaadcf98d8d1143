"""Prompt-prefix reuse (provider prefix caching) across a 200-turn group
conversation (30 with --quick): for each chat request, the share of the previous request's
messages it repeats unchanged from the start (a request after a compression starts anew).
Conversations: `text` (no memories), `memories` (auto-inject of 8 memories, shown beside) and
`thinking` (reasoning_content, tool calls, a 6 000-token context that compresses).

Target: share >= 95 % on every turn of the text conversation, and on every turn of the
thinking conversation between compressions.
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
from tests.fakes.openai_server import FakeOpenAI, Reply, text, tool_calls
from tests.fakes.responders import count_prompt_tokens

TARGET_SHARE = 0.95
THINKING_CONTEXT_TOKENS = 6000
THOUGHTS = (
    "用户在群里随口聊天，先看看上下文里有没有需要接的话题，",
    "这句话里提到了具体的事情，也许之前有人说过相关的安排，",
    "语气比较轻松，回复要简短自然，不要像客服，",
)
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


def thinking_model(body: dict[str, Any]) -> Reply:
    """`fake_model` with a few hundred characters of reasoning on every reply; every fourth
    turn of the conversation (its requests carry tools) searches the memories first."""
    messages = body["messages"]
    usage = {"prompt_tokens": count_prompt_tokens(messages), "completion_tokens": 120}
    thought = THOUGHTS[len(messages) % len(THOUGHTS)] * 4 + f"第 {len(messages)} 条。"
    users = sum(1 for m in messages if m["role"] == "user")
    if "tools" in body and messages[-1]["role"] == "user" and users % 4 == 0:
        return tool_calls(("memory_search", {"query": "周末"}), reasoning=thought, usage=usage)
    return text(REPLIES[len(messages) % len(REPLIES)], usage=usage, reasoning=thought)


def turn_message(rng: random.Random) -> Message:
    """One line of the conversation, sometimes with an @ or a QQ face."""
    content = Message(MessageSegment.text(chat_line(rng, 10, 150)))
    roll = rng.random()
    if roll < 0.15:
        content = MessageSegment.at(rng.choice(SPEAKERS)[1]) + content
    elif roll < 0.25:
        content += MessageSegment.face(14)
    return content


def conversation_requests(
    llm: FakeOpenAI, prompt: str
) -> tuple[list[list[dict[str, Any]]], set[int]]:
    """The messages of every request of the conversation (system prompt `prompt`), and the
    indices of those sent right after another request (a compression) came in between."""
    requests: list[list[dict[str, Any]]] = []
    after_compression: set[int] = set()
    other_since_last = False
    for body in llm.chat_requests:
        if body["messages"][0]["content"] != prompt:
            other_since_last = True
            continue
        if other_since_last and requests:
            after_compression.add(len(requests))
        requests.append(body["messages"])
        other_since_last = False
    return requests, after_compression


def shares(
    requests: list[list[dict[str, Any]]], skip: frozenset[int] | set[int] = frozenset()
) -> list[float]:
    """The prefix share of every request after the first (but those in `skip`)."""
    result = []
    for index, (previous, current) in enumerate(itertools.pairwise(requests), start=1):
        if index in skip:
            continue
        same = 0
        for old, new in zip(previous, current, strict=False):
            if json.dumps(old, sort_keys=True) != json.dumps(new, sort_keys=True):
                break
            same += 1
        result.append(same / len(previous))
    return result


GROUPS = {"text": 701, "memories": 702, "thinking": 703}


async def conversation(
    bench: Bench, label: str, memories: tuple[str, ...], turns: int
) -> list[float]:
    """Run one conversation on a fresh runtime and print its shares."""
    group_id = GROUPS[label]
    key = group_key(group_id)
    rng = random.Random(group_id)
    bot = CountingBot()
    thinking = label == "thinking"
    settings = {"aimemory_max_context_tokens": THINKING_CONTEXT_TOKENS} if thinking else {}
    with fake_llm(thinking_model if thinking else fake_model) as llm:
        llm.thinking_model = thinking
        async with plugin_runtime(llm, bench.work_dir / f"{label}.db", **settings) as runtime:
            for content in memories:
                await memory_service(runtime).save(key, content, source="command")
            for _ in range(turns):
                await handle_event(bot, addressed(turn_message(rng), group_id, rng))
            requests, after_compression = conversation_requests(llm, system_prompt(runtime, key))
            window_tokens = session_bot(runtime, key).window.tokens
        rejected = sum(1 for r in llm.requests if r.status >= 400)
    if len(requests) < turns or bot.sent_count != turns or rejected:
        raise RuntimeError(
            f"{label}: {len(requests)} requests ({rejected} rejected), "
            f"{bot.sent_count} replies, {turns} turns"
        )
    values = shares(requests, after_compression)
    below = [(turn, share) for turn, share in enumerate(values, start=2) if share < TARGET_SHARE]
    print(
        f"[{label}] {turns} turns, {len(requests)} requests, {len(after_compression)} "
        f"compressions, {len(requests[-1])} messages, {window_tokens} tokens at the end"
        f"; prefix share min {min(values):.2%}, p5 {percentile(values, 0.05):.2%}, "
        f"mean {statistics.fmean(values):.2%}; requests below {TARGET_SHARE:.0%}: {len(below)}"
    )
    for turn, share in below[:5]:
        print(f"[{label}]   request {turn}: {share:.2%}")
    return values


async def run(bench: Bench) -> None:
    """Run the three conversations, then the verdict on the text and thinking ones."""
    turns = 30 if bench.quick else 200
    text_shares = await conversation(bench, "text", (), turns)
    await conversation(bench, "memories", MEMORIES, turns)
    thinking_shares = await conversation(bench, "thinking", (), turns)
    worst = min(text_shares)
    worst_thinking = min(thinking_shares)
    verdict(
        f"text: every turn >= {TARGET_SHARE:.0%}, min {worst:.2%}; thinking: every request "
        f"between compressions >= {TARGET_SHARE:.0%}, min {worst_thinking:.2%}",
        worst >= TARGET_SHARE and worst_thinking >= TARGET_SHARE,
    )


if __name__ == "__main__":
    main(__doc__, run)

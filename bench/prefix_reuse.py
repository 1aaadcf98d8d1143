"""Prompt-prefix reuse across a 200-turn group conversation: per chat request, the share of the
previous request's messages it repeats from the start, in a `text` and a `thinking` (reasoning,
tool calls, compressions) conversation. With `--model-url URL --model NAME`, the tokens a real
server served from its prompt cache instead (bench/prefix_reuse_real.py)."""

from __future__ import annotations

import functools
import itertools
import json
import random
from hashlib import sha1
from typing import Any

from nonebot.adapters.onebot.v11 import Message, MessageSegment
from nonebot.message import handle_event

from bench import generated_chat as gen
from bench import harness as h
from bench.prefix_reuse_real import real_options, run_real
from tests.fakes.openai_server import FakeOpenAI, Reply, text, tool_calls
from tests.fakes.responders import count_prompt_tokens

TARGET_SHARE = 0.95
THINKING_CONTEXT_TOKENS = 6000
GROUPS = {"text": 701, "thinking": 703}
Requests = list[list[dict[str, Any]]]  # the messages of each chat request
THOUGHTS = (
    "用户在群里随口聊天，先看看上下文里有没有需要接的话题，",
    "这句话里提到了具体的事情，也许之前有人说过相关的安排，",
    "语气比较轻松，回复要简短自然，不要像客服，",
)


def fake_model(body: dict[str, Any], thinking: bool = False) -> Reply:
    """A reply of its own to each message (a reply said again to another message is a
    stock reply, asked for again without the exchanges it copied: a request on another
    prefix by design, not what this bench measures), usage in cl100k; thinking, with
    reasoning and now and then a search."""
    messages = body["messages"]
    usage = {"prompt_tokens": count_prompt_tokens(messages), "completion_tokens": 20}
    reply = f"好的，第 {len(messages)} 条：{sha1(str(len(messages)).encode()).hexdigest()[:24]}"
    if not thinking:
        return text(reply, usage=usage)
    usage["completion_tokens"] = 120
    thought = THOUGHTS[len(messages) % len(THOUGHTS)] * 4 + f"第 {len(messages)} 条。"
    users = sum(1 for m in messages if m["role"] == "user")
    if "tools" in body and messages[-1]["role"] == "user" and users % 4 == 0:
        return tool_calls(("memory_search", {"query": "周末"}), reasoning=thought, usage=usage)
    return text(reply, usage=usage, reasoning=thought)


def turn_message(rng: random.Random) -> Message:
    """One line of the conversation, sometimes with an @ or a QQ face."""
    content = Message(MessageSegment.text(gen.chat_line(rng, 10, 150)))
    roll = rng.random()
    if roll < 0.15:
        content = MessageSegment.at(rng.choice(gen.SPEAKERS)[1]) + content
    elif roll < 0.25:
        content += MessageSegment.face(14)
    return content


def prefix_shares(llm: FakeOpenAI, prompt: str) -> tuple[list[float], Requests, int]:
    """The prefix share of each chat request but the first and those after a compression."""
    requests: Requests = []
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
    shares = []
    for index, (previous, current) in enumerate(itertools.pairwise(requests), start=1):
        if index not in after_compression:
            pairs = zip(previous, current, strict=False)
            same = itertools.takewhile(lambda pair: same_json(*pair), pairs)
            shares.append(sum(1 for _ in same) / len(previous))
    return shares, requests, len(after_compression)


def same_json(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether two messages of a request are the same JSON."""
    return json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)


async def conversation(bench: h.Bench, label: str, turns: int) -> list[float]:
    """Run one conversation on a fresh runtime and print its shares."""
    group_id = GROUPS[label]
    key, rng, bot = h.group_key(group_id), random.Random(group_id), h.CountingBot()
    thinking = label == "thinking"
    settings = {"aimemory_max_context_tokens": THINKING_CONTEXT_TOKENS} if thinking else {}
    model = functools.partial(fake_model, thinking=thinking)
    async with h.plugin(bench.work_dir / f"{label}.db", model, **settings) as (llm, runtime):
        llm.thinking_model = thinking
        for _ in range(turns):
            await handle_event(bot, gen.addressed(turn_message(rng), group_id, rng))
        values, requests, compressions = prefix_shares(llm, runtime.system_prompt_for(key))
        rejected = sum(1 for r in llm.requests if r.status >= 400)
    if len(requests) < turns or bot.sent_count != turns or rejected:
        raise RuntimeError(
            f"{label}: {len(requests)} requests ({rejected} rejected), "
            f"{bot.sent_count} replies, {turns} turns"
        )
    below = [(turn, share) for turn, share in enumerate(values, start=2) if share < TARGET_SHARE]
    print(
        f"[{label}] {turns} turns, {len(requests)} requests, {compressions} compressions; "
        f"prefix share min {min(values):.2%}; requests below {TARGET_SHARE:.0%}: {len(below)}"
    )
    for turn, share in below[:5]:
        print(f"[{label}]   request {turn}: {share:.2%}")
    return values


async def run(bench: h.Bench) -> None:
    """Run both conversations, then the verdict (on a real server with --model-url)."""
    if bench.args.model_url:
        await run_real(bench)
        return
    turns = 30 if bench.quick else 200
    worst, worst_thinking = [min(await conversation(bench, c, turns)) for c in GROUPS]
    h.verdict(
        f"text: every turn >= {TARGET_SHARE:.0%}, min {worst:.2%}; thinking: every request "
        f"between compressions >= {TARGET_SHARE:.0%}, min {worst_thinking:.2%}",
        worst >= TARGET_SHARE and worst_thinking >= TARGET_SHARE,
    )


if __name__ == "__main__":
    h.main(__doc__, run, real_options)

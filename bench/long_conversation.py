"""Token cost, compression cadence and fact retention of a 500-turn group conversation at an
8 000-token budget, one turn in 12.5 stating a tagged fact the fake's summaries keep; prompt
tokens in cl100k, tools included, beside the full history every turn (the baseline); then 45
turns at a budget 240 tokens above the fixed prompt.
Targets: no request over the budget; total <= 30 % of the full history; <= 25 compressor calls
in 200 turns; every fact kept; at the tight budget, no two turns in a row with compressions.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

from nonebot.message import handle_event

from bench import harness as h
from tests.fakes.openai_server import Reply, text
from tests.fakes.responders import FactKeepingLLM, count_prompt_tokens, is_compression_request

TARGET_FULL_HISTORY_SHARE = 0.30
TARGET_CALLS_PER_200_TURNS = 25
CADENCE_TURNS = 200
TIGHT_TURNS = 45
TIGHT_ROOM_TOKENS = 240  # the budget above the fixed prompt in the tight run
TURNS_PER_FACT = 12.5
GROUP_ID = 736451029
# A fact's value is what the compressor's tag pattern captures whole: no spaces or commas.
FACTS = (
    *("{name}住在{city}", "{name}不吃{food}", "{name}养了一只{pet}", "{name}每周六去{hobby}"),
    *("{name}{when}去{city}出差", "{name}最喜欢{singer}", "聚餐定在{city}的{place}"),
)
FACT_LINES = (
    *("跟大家说一下，{tag}，以后安排的时候注意一下。", "记一下：{tag}。"),
    *("{tag}，这个我上次好像忘了说", "对了小忆你记住，{tag}。", "补充一句 {tag}，别搞错了哈"),
)


def fact_tags(rng: random.Random, count: int) -> list[str]:
    """`count` distinct tagged facts, `#fact1:…` on."""
    values: dict[str, None] = {}
    while len(values) < count:
        values[h.fill(rng, rng.choice(FACTS), {})] = None
    return [f"#fact{n}:{value}" for n, value in enumerate(values, start=1)]


class ScriptedModel:
    """Chat replies of 20-80 characters, usage counting the tools as a provider does; summaries
    from FactKeepingLLM. Keeps every request's prompt tokens and the full history's."""

    def __init__(self, rng: random.Random) -> None:
        self.summarizer = FactKeepingLLM()
        self.rng = rng
        self.chat_tokens: list[int] = []
        self.compression_tokens: list[int] = []
        self.said_tokens: list[int] = []  # every user line and reply so far
        self.full_history = 0
        self.last_chat: list[dict[str, Any]] = []
        self.turn = 0  # set by the driver before each turn
        self.compression_turns: list[int] = []  # the turn of every compressor call
        self.fixed_tokens = 0  # system prompt + tools of the last chat request

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if is_compression_request(body):
            self.compression_tokens.append(count_prompt_tokens(messages))
            self.compression_turns.append(self.turn)
            return self.summarizer(body)
        tools = json.dumps(body.get("tools") or [], ensure_ascii=False, separators=(",", ":"))
        fixed = self.fixed_tokens = count_prompt_tokens([messages[0], {"content": tools}])
        self.said_tokens.append(count_prompt_tokens(messages[-1:]))
        self.full_history += fixed + sum(self.said_tokens)
        prompt = fixed + count_prompt_tokens(messages[1:])
        self.chat_tokens.append(prompt)
        self.last_chat = messages
        reply = h.chat_line(self.rng, 20, 80)
        self.said_tokens.append(count_prompt_tokens([{"content": reply}]))
        return text(reply, usage={"prompt_tokens": prompt, "completion_tokens": len(reply)})

    def consecutive(self) -> int:
        """How many turns with compressor calls followed a turn with compressor calls."""
        ran = set(self.compression_turns)
        return sum(1 for turn in ran if turn - 1 in ran)


async def converse(
    bench: h.Bench, model: ScriptedModel, turns: int, budget: int, tags: list[str], name: str
) -> None:
    """Drive `turns` turns of group chat at `budget`, stating `tags` spread evenly."""
    rng = random.Random(20261130)
    step = turns / max(len(tags), 1)
    fact_at = {int(step * n + step / 2): tag for n, tag in enumerate(tags)}
    bot = h.CountingBot()
    sent_at = int(time.time()) - turns * 240
    settings = {"aimemory_max_context_tokens": budget, "aimemory_memory_extract_on_compact": False}
    async with h.plugin(bench, model, f"{name}.db", **settings):
        for index in range(turns):
            model.turn = index
            tag = fact_at.get(index)
            line = rng.choice(FACT_LINES).format(tag=tag) if tag else h.chat_line(rng, 20, 120)
            sent_at += rng.randint(5, 240)
            await handle_event(bot, h.addressed(line, GROUP_ID, rng, sent_at))


async def run(bench: h.Bench) -> None:
    """Drive the long conversation and the tight-budget one, then print the verdicts."""
    turns, budget = (120, 3000) if bench.quick else (500, 8000)
    tags = fact_tags(random.Random(20261130), max(1, round(turns / TURNS_PER_FACT)))
    model = ScriptedModel(random.Random(1))
    await converse(bench, model, turns, budget, tags, "long")
    run_total = sum(model.chat_tokens) + sum(model.compression_tokens)
    first_200 = sum(1 for turn in model.compression_turns if turn < CADENCE_TURNS)
    print(
        f"{turns} turns at a budget of {budget} tokens: {run_total:,} prompt tokens with the "
        f"compressor's ({len(model.compression_tokens)} calls, {first_200} in the first "
        f"{min(turns, CADENCE_TURNS)} turns); baseline, the full history every turn: "
        f"{model.full_history:,}"
    )
    final_text = "\n".join(str(m.get("content") or "") for m in model.last_chat)
    missing = [tag for tag in tags if tag not in final_text]
    tight = ScriptedModel(random.Random(2))
    tight_budget = model.fixed_tokens + TIGHT_ROOM_TOKENS
    await converse(bench, tight, TIGHT_TURNS, tight_budget, [], "tight")
    print(
        f"tight budget {tight_budget} ({TIGHT_ROOM_TOKENS} above the fixed prompt): compressor "
        f"ran on {len(set(tight.compression_turns))} of {TIGHT_TURNS} turns"
    )
    over, quick = sum(1 for size in model.chat_tokens if size > budget), bench.quick
    h.verdict(f"{over} of {len(model.chat_tokens)} requests over the budget", not over, quick=quick)
    share = run_total / model.full_history
    label = f"total {share:.1%} <= {TARGET_FULL_HISTORY_SHARE:.0%} of the full history"
    h.verdict(label, share <= TARGET_FULL_HISTORY_SHARE, quick=quick)
    label = f"{first_200} compressor calls in {min(turns, CADENCE_TURNS)} turns at {budget} tokens"
    label += f" <= {TARGET_CALLS_PER_200_TURNS}"
    h.verdict(label, first_200 <= TARGET_CALLS_PER_200_TURNS, quick=quick)
    label = f"{len(tags) - len(missing)}/{len(tags)} tagged facts kept; missing: {missing or '-'}"
    h.verdict(label, not missing, quick=quick)
    label = f"{tight.consecutive()} consecutive compressor turns at the tight budget"
    h.verdict(label, tight.consecutive() == 0, quick=quick)


if __name__ == "__main__":
    h.main(__doc__, run)

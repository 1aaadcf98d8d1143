"""Token cost and fact retention of a long group conversation under the rolling summary.

A scripted 500-turn group conversation (120 with --quick) goes through
`nonebot.message.handle_event` to the plugin with an 8 000-token budget (3 000 with
--quick): five speakers, lines of 20-120 characters, and one turn in 12.5 stating a tagged
fact such as `#fact17:小明住在杭州`. The fake LLM answers chat with replies of 20-80
characters and compression requests with a summary that keeps every `#factN:…` tag it is
shown (tests/fakes/responders.FactKeepingLLM). Prompt tokens are counted with cl100k, the
tool schemas included, as the plugin budgets them.
Printed: prompt tokens per chat request (max, over budget), the run's total with and
without the compressor's requests next to two baselines counted over the same
conversation -- (a) the full history every turn, (b) only the last 20 messages -- the
compressions done, and how many stated facts the final request still carries.

Targets: no request over the budget; total (compression included) <= 30 % of the
full-history baseline; 100 % of the tagged facts kept.
Run: python -m bench.long_conversation [--quick]
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

from nonebot.message import handle_event

from bench.harness import (
    Bench,
    CountingBot,
    addressed,
    chat_line,
    fake_llm,
    fill,
    group_key,
    main,
    plugin_runtime,
    session_bot,
    verdict,
)
from tests.fakes.openai_server import Reply, text
from tests.fakes.responders import FactKeepingLLM, count_prompt_tokens, is_compression_request

TARGET_FULL_HISTORY_SHARE = 0.30
TURNS_PER_FACT = 12.5
FIXED_WINDOW_MESSAGES = 20
GROUP_ID = 736451029
# A fact's value is what the compressor's tag pattern captures whole: no spaces or commas.
FACTS = (
    "{name}住在{city}",
    "{name}不吃{food}",
    "{name}养了一只{pet}",
    "{name}每周六去{hobby}",
    "{name}{when}去{city}出差",
    "{name}最喜欢{singer}",
    "聚餐定在{city}的{place}",
)
FACT_LINES = (
    "跟大家说一下，{tag}，以后安排的时候注意一下。",
    "记一下：{tag}。",
    "{tag}，这个我上次好像忘了说",
    "对了小忆你记住，{tag}。",
    "补充一句 {tag}，别搞错了哈",
)


class ScriptedModel:
    """Chat replies of 20-80 characters whose usage counts the tools too, as a provider
    does; summaries from FactKeepingLLM. Keeps the prompt tokens of every request and what
    the two baselines would have sent for the same conversation."""

    def __init__(self, rng: random.Random) -> None:
        self.summarizer = FactKeepingLLM()
        self.rng = rng
        self.chat_tokens: list[int] = []
        self.compression_tokens: list[int] = []
        self.said_tokens: list[int] = []  # every user line and reply so far
        self.full_history = self.fixed_window = 0
        self.last_chat: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if is_compression_request(body):
            self.compression_tokens.append(count_prompt_tokens(messages))
            return self.summarizer(body)
        tools = json.dumps(body.get("tools") or [], ensure_ascii=False, separators=(",", ":"))
        fixed = count_prompt_tokens([messages[0], {"content": tools}])
        self.said_tokens.append(count_prompt_tokens(messages[-1:]))
        self.full_history += fixed + sum(self.said_tokens)
        self.fixed_window += fixed + sum(self.said_tokens[-FIXED_WINDOW_MESSAGES:])
        prompt = fixed + count_prompt_tokens(messages[1:])
        self.chat_tokens.append(prompt)
        self.last_chat = messages
        reply = chat_line(self.rng, 20, 80)
        self.said_tokens.append(count_prompt_tokens([{"content": reply}]))
        return text(reply, usage={"prompt_tokens": prompt, "completion_tokens": len(reply)})


def fact_tags(rng: random.Random, count: int) -> list[str]:
    """`count` distinct tagged facts, `#fact1:…` on."""
    values: dict[str, None] = {}
    while len(values) < count:
        values[fill(rng, rng.choice(FACTS), {})] = None
    return [f"#fact{n}:{value}" for n, value in enumerate(values, start=1)]


async def run(bench: Bench) -> None:
    """Drive the conversation, then print its token cost, the baselines and the verdicts."""
    turns, budget = (120, 3000) if bench.quick else (500, 8000)
    rng = random.Random(20261130)
    tags = fact_tags(rng, max(1, round(turns / TURNS_PER_FACT)))
    step = turns / len(tags)
    fact_at = {int(step * n + step / 2): tag for n, tag in enumerate(tags)}
    model = ScriptedModel(random.Random(1))
    bot = CountingBot()
    sent_at = int(time.time()) - turns * 240
    started = time.perf_counter()
    with fake_llm(model) as llm:
        async with plugin_runtime(
            llm,
            bench.work_dir / "aimemory.db",
            aimemory_max_context_tokens=budget,
            aimemory_memory_extract_on_compact=False,
        ) as runtime:
            for index in range(turns):
                tag = fact_at.get(index)
                line = rng.choice(FACT_LINES).format(tag=tag) if tag else chat_line(rng, 20, 120)
                sent_at += rng.randint(5, 240)
                await handle_event(bot, addressed(line, GROUP_ID, rng, sent_at))
            chatbot = session_bot(runtime, group_key(GROUP_ID))
            compressions = chatbot.stats.count
            summary_tokens = runtime.counter.count(chatbot.summary or "")
    seconds = time.perf_counter() - started

    sizes, compression = model.chat_tokens, model.compression_tokens
    chat_total = sum(sizes)
    run_total = chat_total + sum(compression)
    over = [size for size in sizes if size > budget]
    final_text = "\n".join(str(m.get("content") or "") for m in model.last_chat)
    missing = [tag for tag in tags if tag not in final_text]
    print(
        f"{turns} turns at a budget of {budget} tokens, {bot.sent_count} replies, {seconds:.1f} s"
    )
    print(f"prompt tokens per chat request: max {max(sizes)}, mean {chat_total / len(sizes):.0f}")
    print(f"total prompt tokens, chat requests:           {chat_total:>11,}")
    print(
        f"total prompt tokens, with the compressor's:   {run_total:>11,} ({len(compression)} calls)"
    )
    for label, baseline in (
        ("(a) full history every turn", model.full_history),
        (f"(b) the last {FIXED_WINDOW_MESSAGES} messages only", model.fixed_window),
    ):
        shares = f"run = {chat_total / baseline:.1%}, with compression {run_total / baseline:.1%}"
        print(f"baseline {label + ':':<37}{baseline:>11,}   {shares}")
    print(f"compressions: {compressions}; final summary {summary_tokens} tokens")
    print("tagged facts missing from the final request: " + (", ".join(missing) or "none"))
    verdict(f"{len(over)} of {len(sizes)} requests over the budget", not over, quick=bench.quick)
    share = run_total / model.full_history
    label = f"total {share:.1%} <= {TARGET_FULL_HISTORY_SHARE:.0%} of the full history"
    verdict(label, share <= TARGET_FULL_HISTORY_SHARE, quick=bench.quick)
    kept = len(tags) - len(missing)
    verdict(f"{kept}/{len(tags)} tagged facts kept", not missing, quick=bench.quick)


if __name__ == "__main__":
    main(__doc__, run)

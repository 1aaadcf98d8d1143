"""The project's speed targets on SQLite (a temporary file) and on a throwaway PostgreSQL server
(tests/fakes/postgres.py) side by side, 100 000 memories and chat-log rows each (5 000 with
--quick): turn overhead, memory search and save in a scope of 200, chat-log search and write,
start-up on the large database, two processes writing at once (bench/backends_children.py).
The memories are filled into SQLite through MemoryStore and copied into PostgreSQL by the
plugin's migration copy (store/copying.py; both in bench/backends_databases.py).
"""

from __future__ import annotations

import gc
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nonebot.message import handle_event

from bench import backends_children as children
from bench import generated_chat as gen
from bench import harness as h
from bench.backends_databases import copy_database, insert_fill_memories, postgres_database
from tests.fakes.openai_server import FakeOpenAI

FIRST_FILL_GROUP_ID = 810_000_001
STARTUP_RUNS, WARMUP_QUERIES = 3, 30
FULL_FILL_TOKENS, MESSAGE_OVERHEAD_TOKENS = 124_000, 4
# A reply that claims no save: one that does ("记下了") is asked again, a second model call.
REPLY = "收到～有需要随时叫我。"
MAIN_SETTINGS: dict[str, Any] = {
    "aimemory_max_context_tokens": 136_000,
    "aimemory_compress_threshold": 0.95,
    "aimemory_chat_log_flush_seconds": 60,
}
MEMORY_QUERIES = (
    *("{name} 喜欢吃什么", "谁不吃{food}", "{name} 住在哪", "{name}的{pet}", "{food} {city}"),
    *("{hobby} {name}", "{city} 出差", "聚餐 {place}", "{name} {when} 计划"),
    *("@小忆 你还记得{name}喜欢吃什么吗", "{when}聚餐去{city}，大家有什么忌口的吗？"),
    *("小忆，{name}的生日快到了，送什么礼物好", "周末想去吃{food}，有谁一起，{name}你去不去"),
    *("{name}是不是说过{when}要去{city}出差", "{past}那个{thing}的事后来怎么样了"),
)
CHAT_QUERIES = (
    *("今天", "大家", "明天", "一下", "有人", "推荐", "周末", "报错", "快递", "聚餐"),
    *("{food}", "{city}", "{game}", "{thing}", "{name}", "{movie}", "{singer}", "{tech}"),
    *("量子纠缠", "区块链", "芭蕾舞", "潜水证", "订单号 {order}", "PR {num}"),
    *("{food} {city}", "{name} {game}", "{tech} 报错", "{thing} 预算", "{singer} 演唱会"),
    *("上次谁说要去{city}吃{food}来着", "{name}之前推荐的{thing}是哪个"),
    *("{tech}那个{error}后来怎么修好的", "{name}什么时候去{city}出差"),
    *("deploy", "docker", "{en_word} failed", "nginx 502", "LGTM", "{en_word} {en_word}"),
    # FTS5 syntax in user input must be searched as plain text.
    *('"', "*", "{food}*", "NEAR({food} {food})", "{food} OR {food}", "NOT 加班", "-docker"),
    *("(服务器", "tokens:{food}", 'a"b', "C++", "{name}: 在吗", "rowid:1", "{tech}*"),
)
# The timed operations, each a p50 and a p99 row of the closing table.
TIMED = (
    ("turn_small", "turn overhead {}, 10 messages"),
    ("turn_full", "turn overhead {}, full window"),
    ("search", "memory search {}, 200 in scope"),
    ("cold", "memory search {}, scope's first"),
    ("save", "memory save {}, up to 200"),
    ("chat", "chat-log search {} (search_current_chat)"),
)
# The closing table's rows: key, label, unit (ms, s, /s or a count).
ROWS: tuple[tuple[str, str, str], ...] = (
    *((f"{key}_{p}", label.format(p), "ms") for key, label in TIMED for p in ("p50", "p99")),
    ("write", "chat-log write (ChatLog)", "/s"),
    ("start_s", "start-up (Runtime.start), large DB", "s"),
    ("first_search_s", "start-up to first chat-log search", "s"),
    ("rows_per_s", "2 processes: chat-log rows, combined", "/s"),
    ("saves_per_s", "2 processes: memory saves, combined", "/s"),
    ("rows_lost", "2 processes: chat-log rows lost", ""),
    ("saves_lost", "2 processes: memories lost", ""),
)
# (key, relation, target, a quick run is smaller than the target's)
TARGETS = (
    ("turn_small_p50", "<=", 3.0, False),
    ("turn_full_p50", "<=", 10.0, False),
    ("search_p99", "<=", 5.0, False),
    ("write", ">=", 2000.0, True),
    ("chat_p99", "<=", 20.0, True),
)
Figures = dict[str, float]


@dataclass(frozen=True)
class Sizes:
    """How much the run writes and how many samples it takes."""

    memories: int  # in the database, the searched scope's included
    rows: int  # of the large chat
    turns: int
    warmup_turns: int
    memory_searches: int
    cold_scopes: int
    chat_searches: int
    writer_rows: int  # per writing process
    writer_memories: int  # per writing process
    startup_runs: int


QUICK_SIZES = Sizes(5_000, 5_000, 20, 2, 100, 24, 60, 2_000, 200, 1)
FULL_SIZES = Sizes(100_000, 100_000, 300, 10, 500, 100, 300, 20_000, 1_000, STARTUP_RUNS)


def percentiles(key: str, samples_ns: Sequence[int]) -> Figures:
    """`key_p50` and `key_p99` of `samples_ns`, in ms."""
    return {f"{key}_p{p}": h.ms(h.percentile(samples_ns, p / 100)) for p in (50, 99)}


def time_llm_calls(runtime: h.Runtime) -> list[int]:
    """Time the posts of the LLM clients' HTTP client: each call's ns lands in the list."""
    durations: list[int] = []
    post = runtime.llm.http.post_capped

    async def timed_post(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return await post(*args, **kwargs)
        finally:
            durations.append(time.perf_counter_ns() - start)

    runtime.llm.http.post_capped = timed_post  # type: ignore[method-assign]
    return durations


def exchanges(runtime: h.Runtime, rng: random.Random, tokens: int) -> list[tuple[str, str]]:
    """Stored (user line in the speaker format, reply) pairs holding `tokens` tokens."""
    pairs: list[tuple[str, str]] = []
    total = 0
    while total < tokens:
        name, user_id = rng.choice(gen.SPEAKERS)
        line = f"[2026-11-30 14:05] {name}({user_id})：{gen.chat_line(rng, 50, 150)}"
        pairs.append((line, gen.chat_line(rng, 50, 150)))
        total += sum(runtime.counter.count(t) + MESSAGE_OVERHEAD_TOKENS for t in pairs[-1])
    return pairs


@dataclass
class Turns:
    """Addressed turns through NoneBot, each timed less the LLM's wait."""

    llm: FakeOpenAI
    runtime: h.Runtime
    rng: random.Random
    bot: h.CountingBot
    llm_ns: list[int]

    async def one(self, group_id: int) -> int:
        """Overhead of one addressed turn in ns: event in to `send_msg`, less the LLM."""
        event = gen.addressed(gen.chat_line(self.rng, 50, 150), group_id, self.rng)
        self.llm_ns.clear()
        sent = self.bot.sent_count
        start = time.perf_counter_ns()
        await handle_event(self.bot, event)
        if self.bot.sent_count != sent + 1 or len(self.llm_ns) != 1:
            replies = self.bot.sent_count - sent
            raise RuntimeError(f"group {group_id}: {replies} replies, {len(self.llm_ns)} LLM calls")
        return self.bot.last_sent_ns - start - self.llm_ns[0]

    async def samples(
        self, pairs: list[tuple[str, str]], group_id: int, turns: int, warmup: int
    ) -> list[int]:
        """Overhead of `turns` turns after a cold one and `warmup`, the window restored
        before each."""
        key = h.group_key(group_id)
        await h.prefill_history(self.runtime, key, pairs)
        await self.one(group_id)
        session = self.runtime.sessions.get(key)
        assert session is not None, key
        window = session.bot.window
        saved, samples = list(window.messages), []
        gc.collect()
        for index in range(warmup + turns):
            window.replace(saved)
            sample = await self.one(group_id)
            self.llm.requests.clear()
            if index >= warmup:
                samples.append(sample)
        window.replace(saved)
        return samples


async def measure_turns(llm: FakeOpenAI, runtime: h.Runtime, sizes: Sizes) -> Figures:
    """Turn overhead at a 10-message and a full window."""
    rng = random.Random(1130)
    turns = Turns(llm, runtime, rng, h.CountingBot(), time_llm_calls(runtime))
    small = [exchanges(runtime, rng, 1)[0] for _ in range(5)]
    small_ns = await turns.samples(small, 501, sizes.turns, sizes.warmup_turns)
    full = exchanges(runtime, rng, FULL_FILL_TOKENS)
    full_ns = await turns.samples(full, 502, max(5, sizes.turns // 3), sizes.warmup_turns)
    return {**percentiles("turn_small", small_ns), **percentiles("turn_full", full_ns)}


async def measure_memories(
    runtime: h.Runtime, sizes: Sizes, searched: Sequence[gen.Memory], cold: Sequence[str]
) -> Figures:
    """Save the searched scope's memories, search it warm, then each of `cold` once."""
    service, scope = h.memory_service(runtime), h.group_key(children.CHAT_GROUP_ID)

    async def save(memory: gen.Memory) -> None:
        if (status := await gen.save(service, scope, memory)) != "saved":
            raise RuntimeError(f"save in {scope}: {status}: {memory.content}")

    saves = await h.timed(save, searched)
    rng, warmup = random.Random(200), sizes.memory_searches // 10
    queries = gen.distinct(rng, MEMORY_QUERIES, warmup + sizes.memory_searches)
    warm = await h.timed(lambda query: service.search(scope, query), queries)
    firsts = gen.distinct(rng, MEMORY_QUERIES, len(cold))
    loads = await h.timed(lambda i: service.search(cold[i], firsts[i]), range(len(cold)))
    return {
        **percentiles("save", saves),
        **percentiles("search", warm[warmup:]),
        **percentiles("cold", loads),
    }


def chat_queries(rng: random.Random, count: int) -> list[str]:
    """`count` distinct queries, each template used once before any repeats."""
    found: dict[str, None] = dict.fromkeys(gen.fill(rng, t) for t in CHAT_QUERIES)
    while len(found) < count:
        found[gen.fill(rng, rng.choice(CHAT_QUERIES))] = None
    ordered = list(found)[:count]
    rng.shuffle(ordered)
    return ordered


async def measure_running(
    target: children.Target, sizes: Sizes, searched: Sequence[gen.Memory], cold: Sequence[str]
) -> Figures:
    """Everything measured in this process on one backend: writes, searches, turns."""
    from nonebot_plugin_aimemory.conversation.warmup import text_tools_ready

    figures: Figures = {}
    settings = {**MAIN_SETTINGS, **target.settings()}
    async with h.plugin(target.db_path, REPLY, **settings) as (llm, runtime):
        await text_tools_ready(runtime.counter)
        step(target, f"writing {spaced(sizes.rows)} chat-log rows")
        # The rows are dropped afterwards: kept, they would lengthen every later collection.
        rows = children.chat_rows(
            random.Random(100), h.group_key(children.CHAT_GROUP_ID), sizes.rows
        )
        figures["write"] = await children.write_through(h.chat_log_writer(runtime), rows)
        del rows
        step(target, "memories and chat-log search")
        figures |= await measure_memories(runtime, sizes, searched, cold)
        queries = chat_queries(random.Random(300), WARMUP_QUERIES + sizes.chat_searches)
        samples = await h.timed(children.chat_search(runtime), queries, WARMUP_QUERIES)
        figures |= percentiles("chat", samples)
        step(target, "turns")
        figures |= await measure_turns(llm, runtime, sizes)
    return figures


def step(target: children.Target, what: str) -> None:
    """A progress line."""
    print(f"[{target.label}] {what}…", flush=True)


def spaced(value: float) -> str:
    """`value` rounded, thousands apart by a space (`12 345`)."""
    return f"{value:,.0f}".replace(",", " ")


def shown(unit: str, value: float | None) -> str:
    """A table cell: the value in its unit."""
    if value is None or math.isnan(value):
        return "—"
    if unit == "ms":
        return f"{value:.3f} ms" if value < 10 else f"{value:.1f} ms"
    if unit == "s":
        return f"{value:.2f} s"
    return f"{spaced(value)} /s" if unit == "/s" else f"{value:.0f}"


def print_report(sizes: Sizes, by_backend: dict[str, Figures], quick: bool) -> None:
    """The closing table in Markdown, every metric on both backends; then the targets."""
    sqlite, postgres = by_backend.values()
    big = f"{spaced(sizes.memories)} memories, {spaced(sizes.rows)} chat-log rows"
    print(f"\nDatabase: {big}; ratio = PostgreSQL ÷ SQLite\n")
    print("| metric | SQLite | PostgreSQL | ratio |\n| --- | --- | --- | --- |")
    for key, label, unit in ROWS:
        ours, theirs = sqlite.get(key), postgres.get(key)
        ratio = "—"
        if ours and theirs is not None and not math.isnan(ours + theirs):
            ratio = f"{theirs / ours:.2f}×"
        print(f"| {label} | {shown(unit, ours)} | {shown(unit, theirs)} | {ratio} |")
    print()
    units = {key: (label, unit) for key, label, unit in ROWS}
    for backend, figures in by_backend.items():
        for key, relation, target, small in TARGETS:
            (label, unit), value = units[key], figures[key]
            met = value <= target if relation == "<=" else value >= target
            compared = f"{shown(unit, value)} {relation} {shown(unit, target)}"
            h.verdict(f"{backend}: {label} {compared}", met, quick=quick and small)
        lost = figures["rows_lost"] + figures["saves_lost"]
        h.verdict(f"{backend}: nothing lost by two writing processes (lost {lost:.0f})", lost == 0)


async def run(bench: h.Bench) -> dict[str, float] | None:
    """Fill both databases, measure each backend, then print the table and the verdicts."""
    if bench.child is not None:
        if bench.child["role"] == "startup":
            return await children.startup_child(children.Target.from_spec(bench.child))
        return await children.writer_child(bench.child)
    sizes = QUICK_SIZES if bench.quick else FULL_SIZES
    sqlite = children.Target("SQLite", bench.work_dir / "sqlite" / "aimemory.db")
    async with postgres_database() as url:
        postgres = children.Target("PostgreSQL", bench.work_dir / "postgresql" / "aimemory.db", url)
        seen: set[str] = set()
        searched = gen.memories(random.Random(201), children.SCOPE_MEMORIES, seen)
        count = (sizes.memories - children.SCOPE_MEMORIES) // children.SCOPE_MEMORIES
        scopes = [h.group_key(FIRST_FILL_GROUP_ID + i) for i in range(count)]
        started = time.perf_counter()
        inserted = await insert_fill_memories(sqlite.db_path, scopes, seen)
        filled_s = time.perf_counter() - started
        print(f"filled {inserted} memories in {len(scopes)} scopes in {filled_s:.0f} s", flush=True)
        started = time.perf_counter()
        await copy_database(sqlite.db_path, url)
        print(f"copied them into PostgreSQL in {time.perf_counter() - started:.0f} s", flush=True)
        by_backend: dict[str, Figures] = {}
        for target in (sqlite, postgres):
            figures = await measure_running(target, sizes, searched, scopes[: sizes.cold_scopes])
            step(target, "start-up")
            figures |= await children.measure_startup(target, sizes.startup_runs)
            step(target, "two writing processes")
            rows, memories = sizes.writer_rows, sizes.writer_memories
            figures |= await children.measure_two_writers(target, rows, memories, bench.work_dir)
            by_backend[target.label] = figures
    print_report(sizes, by_backend, bench.quick)
    return None


if __name__ == "__main__":
    h.main(__doc__, run)

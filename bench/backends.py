"""The project's speed targets on SQLite (a temporary file) and on a throwaway PostgreSQL server
(tests/fakes/postgres.py) side by side, 100 000 memories and chat-log rows each (5 000 with
--quick): turn overhead at 10 messages and a full window, memory search and save in a scope
of 200, chat-log search and write, start-up on the large database in a fresh process, and
two processes writing at once (nothing lost). The memories are filled into SQLite through
MemoryStore and copied into PostgreSQL by the plugin's migration copy (store/copying.py).
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import random
import statistics
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple

from nonebot.message import handle_event

from bench import harness as h
from tests.fakes.openai_server import FakeOpenAI, text

# One group holds the large chat log and the searched scope; the others only fill the table.
CHAT_GROUP_ID = 736_451_029
FIRST_FILL_GROUP_ID = 810_000_001
WRITERS_GROUP_ID, FIRST_WRITER_SCOPE_GROUP_ID = 736_451_030, 820_000_001
SCOPE_MEMORIES = 200  # the plugin's default cap of a group's memories
STARTUP_RUNS = 3
WRITERS = 2
READY_TIMEOUT_SECONDS = 120.0
POLL_SECONDS = 0.01
SEARCH_LIMIT = 20
TARGET_TURN_SMALL_MS, TARGET_TURN_FULL_MS, TARGET_MEMORY_SEARCH_MS = 3.0, 10.0, 5.0
TARGET_ROWS_PER_SECOND, TARGET_CHAT_SEARCH_MS = 2000.0, 20.0
FULL_FILL_TOKENS, MESSAGE_OVERHEAD_TOKENS = 124_000, 4
FLUSH_EVERY_ROWS, WARMUP_QUERIES = 200, 30
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

    @classmethod
    def of(cls, quick: bool) -> Sizes:
        """The full run's sizes, or the quick run's."""
        if quick:
            return cls(5_000, 5_000, 20, 2, 100, 24, 60, 2_000, 200, 1)
        return cls(100_000, 100_000, 300, 10, 500, 100, 300, 20_000, 1_000, STARTUP_RUNS)


@dataclass(frozen=True)
class Target:
    """One backend under test: a SQLite file, or a PostgreSQL URL."""

    label: str
    db_path: Path  # the SQLite file; with a URL, only where persona files would be
    url: str = ""

    def settings(self) -> dict[str, Any]:
        """The plugin's database setting for this backend."""
        return {"aimemory_database_url": self.url} if self.url else {}

    def spec(self) -> dict[str, str]:
        """This backend in a child's spec."""
        return {"label": self.label, "db": str(self.db_path), "url": self.url}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Target:
        """The backend a child's spec names."""
        return cls(spec["label"], Path(spec["db"]), spec["url"])


class Metric(NamedTuple):
    """One row of the closing table: its label and unit (ms, s, /s or a count)."""

    label: str
    unit: str


def p50_and_p99(label: str) -> tuple[Metric, Metric]:
    """The p50 and p99 rows, in ms, of one timed operation."""
    return Metric(label.format("p50"), "ms"), Metric(label.format("p99"), "ms")


TURN_SMALL = p50_and_p99("turn overhead {}, 10 messages")
TURN_FULL = p50_and_p99("turn overhead {}, full window")
MEMORY_SEARCH = p50_and_p99("memory search {}, 200 in scope")
MEMORY_COLD = p50_and_p99("memory search {}, scope's first")
MEMORY_SAVE = p50_and_p99("memory save {}, up to 200")
CHAT_SEARCH = p50_and_p99("chat-log search {} (search_current_chat)")
CHAT_WRITE = Metric("chat-log write (ChatLog)", "/s")
STARTUP = Metric("start-up (Runtime.start), large DB", "s")
FIRST_SEARCH = Metric("start-up to first chat-log search", "s")
TWO_ROWS = Metric("2 processes: chat-log rows, combined", "/s")
TWO_SAVES = Metric("2 processes: memory saves, combined", "/s")
TWO_ROWS_LOST = Metric("2 processes: chat-log rows lost", "")
TWO_SAVES_LOST = Metric("2 processes: memories lost", "")
METRICS: tuple[Metric, ...] = (
    *TURN_SMALL,
    *TURN_FULL,
    *MEMORY_SEARCH,
    *MEMORY_COLD,
    *MEMORY_SAVE,
    *CHAT_SEARCH,
    CHAT_WRITE,
    STARTUP,
    FIRST_SEARCH,
    TWO_ROWS,
    TWO_SAVES,
    TWO_ROWS_LOST,
    TWO_SAVES_LOST,
)
Figures = dict[Metric, float]


def percentiles(metrics: tuple[Metric, Metric], samples_ns: Sequence[int]) -> Figures:
    """The p50 and p99 of `samples_ns` in ms, as the pair of metrics."""
    p50, p99 = metrics
    return {
        p50: h.ms(h.percentile(samples_ns, 0.5)),
        p99: h.ms(h.percentile(samples_ns, 0.99)),
    }


def chat_rows(rng: random.Random, session_key: str, count: int) -> list[h.ChatRow]:
    """`count` rows of one session, oldest first, about one a minute up to now."""

    def moments() -> Iterator[datetime]:  # drawn row by row, between the rows' own draws
        moment = datetime.now(timezone.utc) - timedelta(minutes=count)
        for _ in range(count):
            moment += timedelta(seconds=rng.randint(1, 119))
            yield moment

    return h.logged_rows(rng, [session_key], moments())


def chat_queries(rng: random.Random, count: int) -> list[str]:
    """`count` distinct queries, each template used once before any repeats."""
    found: dict[str, None] = dict.fromkeys(h.fill(rng, t) for t in CHAT_QUERIES)
    while len(found) < count:
        found[h.fill(rng, rng.choice(CHAT_QUERIES))] = None
    ordered = list(found)[:count]
    rng.shuffle(ordered)
    return ordered


async def write_through(chat_log: h.ChatLog, rows: Sequence[h.ChatRow]) -> float:
    """Rows/s of `add` + `flush` every FLUSH_EVERY_ROWS."""
    gc.collect()
    started = time.perf_counter()
    for index, row in enumerate(rows, start=1):
        chat_log.add(row)
        if index % FLUSH_EVERY_ROWS == 0 or index == len(rows):
            await chat_log.flush()
    return len(rows) / (time.perf_counter() - started)


async def save_all(service: h.MemoryService, scope: str, batch: Sequence[h.Memory]) -> list[int]:
    """Save `batch` in `scope`; nanoseconds of each save."""

    async def save(memory: h.Memory) -> None:
        outcome = await service.save(
            scope, memory.content, tags=memory.tags, user_id=memory.user_id
        )
        if outcome.status != "saved":
            raise RuntimeError(f"save in {scope}: {outcome.status}: {memory.content}")

    return await h.timed(save, batch)


@dataclass
class Rig:
    """The running plugin, its bot and LLM, how long its LLM calls took, the chat's rng."""

    llm: FakeOpenAI
    runtime: h.Runtime
    bot: h.CountingBot
    llm_ns: list[int]  # of each LLM call since the turn began
    rng: random.Random


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


def exchange(rng: random.Random) -> tuple[str, str]:
    """A stored (user line, reply) pair, the user line in the plugin's speaker format."""
    name, user_id = rng.choice(h.SPEAKERS)
    line = f"[2026-11-30 14:05] {name}({user_id})：{h.chat_line(rng, 50, 150)}"
    return line, h.chat_line(rng, 50, 150)


def exchanges_up_to(rig: Rig, tokens: int) -> list[tuple[str, str]]:
    """Exchanges until they hold `tokens` tokens as the plugin counts them."""
    pairs: list[tuple[str, str]] = []
    total = 0
    while total < tokens:
        pairs.append(exchange(rig.rng))
        total += sum(rig.runtime.counter.count(t) + MESSAGE_OVERHEAD_TOKENS for t in pairs[-1])
    return pairs


async def one_turn(rig: Rig, group_id: int) -> int:
    """Overhead of one addressed turn in ns: event in to `send_msg`, less the LLM's wait."""
    event = h.addressed(h.chat_line(rig.rng, 50, 150), group_id, rig.rng)
    rig.llm_ns.clear()
    sent = rig.bot.sent_count
    start = time.perf_counter_ns()
    await handle_event(rig.bot, event)
    if rig.bot.sent_count != sent + 1 or len(rig.llm_ns) != 1:
        replies = rig.bot.sent_count - sent
        raise RuntimeError(f"group {group_id}: {replies} replies, {len(rig.llm_ns)} LLM calls")
    return rig.bot.last_sent_ns - start - rig.llm_ns[0]


@asynccontextmanager
async def postgres_database() -> AsyncIterator[str]:
    """A throwaway PostgreSQL server (tests/fakes/postgres.py) and an empty database on it;
    yields its URL. Started and removed in a worker thread (initdb and pg_ctl block)."""
    from tests.fakes.postgres import PostgresNotFoundError, PostgresServer

    stack = ExitStack()

    def start() -> str:
        server = stack.enter_context(PostgresServer())
        return stack.enter_context(server.fresh_database())

    try:
        url = await asyncio.to_thread(start)
    except PostgresNotFoundError as error:
        await asyncio.to_thread(stack.close)
        raise SystemExit(f"bench.backends needs a PostgreSQL server: {error}") from None
    try:
        yield url
    finally:
        await asyncio.to_thread(stack.close)


def fill_scopes(count: int) -> list[str]:
    """The scopes that only fill the table, SCOPE_MEMORIES each."""
    return [h.group_key(FIRST_FILL_GROUP_ID + i) for i in range(count // SCOPE_MEMORIES)]


async def insert_fill_memories(path: Path, scopes: Sequence[str], seen: set[str]) -> int:
    """Insert SCOPE_MEMORIES memories into each scope of the SQLite file at `path` through
    MemoryStore (its rules held in SQL, one transaction each); how many."""
    from nonebot_plugin_aimemory.memory.rules import new_id, normalize
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord, MemoryStore
    from nonebot_plugin_aimemory.store.opening import open_backend
    from nonebot_plugin_aimemory.store.times import utc_now_text

    database = await open_backend(str(path))
    if database is None:
        raise SystemExit(f"cannot open {path}")
    rng, inserted, now = random.Random(27), 0, utc_now_text()
    try:
        store = MemoryStore(database)
        for scope in scopes:
            taken: set[str] = set()
            for memory in h.memories(rng, SCOPE_MEMORIES, seen):
                record = MemoryRecord(
                    *(new_id(taken), memory.content, normalize(memory.content)),
                    *(list(memory.tags), memory.user_id),
                    created_at=now,
                    updated_at=now,
                )
                taken.add(record.id)
                if (result := await store.insert(scope, record)) != "inserted":
                    raise RuntimeError(f"fill of {scope}: {result}: {memory.content}")
                inserted += 1
    finally:
        await database.close()
    return inserted


async def copy_database(source: Path, url: str) -> None:
    """Copy the SQLite file's tables into the PostgreSQL database (the plugin's migration)."""
    from nonebot_plugin_aimemory.store.copying import copy_all
    from nonebot_plugin_aimemory.store.opening import open_backend

    sqlite, postgres = await open_backend(str(source)), await open_backend("", url)
    try:
        if sqlite is None or postgres is None:
            raise SystemExit("cannot open the databases to copy")
        report = await copy_all(sqlite, postgres, lambda table, done, total: None)
    finally:
        for database in (sqlite, postgres):
            if database is not None:
                await database.close()
    if report.failed:
        raise SystemExit(f"copy into PostgreSQL failed: {report.failed}")


class ChatSearch:
    """`search_current_chat` of one chat as the model calls it, through the tool registry."""

    def __init__(self, runtime: h.Runtime, key: str) -> None:
        self.registry = runtime.build_chatbot(key).tools

    async def __call__(self, keyword: str) -> str:
        """The tool's answer to `keyword`."""
        from nonebot_plugin_aimemory.engine.messages import ToolCall

        arguments = json.dumps({"keyword": keyword, "limit": SEARCH_LIMIT}, ensure_ascii=False)
        call = ToolCall("call_bench", "search_current_chat", arguments)
        text = (await self.registry.execute(call)).text
        if text.startswith("错误："):
            raise RuntimeError(f"search_current_chat({keyword!r}) failed: {text[:200]}")
        return text


async def turn_samples(
    rig: Rig, pairs: list[tuple[str, str]], group_id: int, turns: int, warmup: int
) -> list[int]:
    """Overhead ns of `turns` turns after `warmup`: a cold turn first, the window restored
    before each."""
    key = h.group_key(group_id)
    await h.prefill_history(rig.runtime, key, pairs)
    await one_turn(rig, group_id)
    session = rig.runtime.sessions.get(key)
    assert session is not None, key
    window = session.bot.window
    saved = list(window.messages)
    samples: list[int] = []
    gc.collect()
    for index in range(warmup + turns):
        window.replace(saved)
        sample = await one_turn(rig, group_id)
        rig.llm.requests.clear()
        if index >= warmup:
            samples.append(sample)
    window.replace(saved)
    return samples


async def measure_turns(llm: FakeOpenAI, runtime: h.Runtime, sizes: Sizes) -> Figures:
    """Turn overhead at a 10-message and a full window."""
    rig = Rig(llm, runtime, h.CountingBot(), time_llm_calls(runtime), random.Random(1130))
    small = [exchange(rig.rng) for _ in range(5)]
    small_ns = await turn_samples(rig, small, 501, sizes.turns, sizes.warmup_turns)
    full = exchanges_up_to(rig, FULL_FILL_TOKENS)
    full_ns = await turn_samples(rig, full, 502, max(5, sizes.turns // 3), sizes.warmup_turns)
    return {**percentiles(TURN_SMALL, small_ns), **percentiles(TURN_FULL, full_ns)}


async def measure_memories(
    runtime: h.Runtime, sizes: Sizes, searched: Sequence[h.Memory], cold: Sequence[str]
) -> Figures:
    """Save the searched scope's memories, search it warm, then each of `cold` once."""
    service, scope = h.memory_service(runtime), h.group_key(CHAT_GROUP_ID)
    saves = await save_all(service, scope, searched)
    rng, warmup = random.Random(200), sizes.memory_searches // 10
    warm = await h.timed(
        lambda query: service.search(scope, query),
        h.distinct(rng, MEMORY_QUERIES, warmup + sizes.memory_searches),
    )
    first_queries = h.distinct(rng, MEMORY_QUERIES, len(cold))
    loads = await h.timed(
        lambda index: service.search(cold[index], first_queries[index]), range(len(cold))
    )
    return {
        **percentiles(MEMORY_SAVE, saves),
        **percentiles(MEMORY_SEARCH, warm[warmup:]),
        **percentiles(MEMORY_COLD, loads),
    }


async def write_chat_log(runtime: h.Runtime, sizes: Sizes) -> Figures:
    """Write the large chat through ChatLog (the rows are dropped afterwards: kept, they
    would lengthen every later garbage collection)."""
    rows = chat_rows(random.Random(100), h.group_key(CHAT_GROUP_ID), sizes.rows)
    return {CHAT_WRITE: await write_through(h.chat_log_writer(runtime), rows)}


async def measure_chat_search(runtime: h.Runtime, sizes: Sizes) -> Figures:
    """`search_current_chat` in the large chat."""
    search = ChatSearch(runtime, h.group_key(CHAT_GROUP_ID))
    queries = chat_queries(random.Random(300), WARMUP_QUERIES + sizes.chat_searches)
    samples = await h.timed(search, queries, WARMUP_QUERIES)
    return percentiles(CHAT_SEARCH, samples)


async def measure_running(
    target: Target, sizes: Sizes, searched: Sequence[h.Memory], cold: Sequence[str]
) -> Figures:
    """Everything measured in this process on one backend: writes, searches, turns."""
    from nonebot_plugin_aimemory.conversation.warmup import text_tools_ready

    figures: Figures = {}
    with h.fake_llm(lambda body: text(REPLY)) as llm:
        settings = {**MAIN_SETTINGS, **target.settings()}
        async with h.plugin_runtime(llm, target.db_path, **settings) as runtime:
            await text_tools_ready(runtime.counter)
            step(target, f"writing {spaced(sizes.rows)} chat-log rows")
            figures |= await write_chat_log(runtime, sizes)
            step(target, "memories and chat-log search")
            figures |= await measure_memories(runtime, sizes, searched, cold)
            figures |= await measure_chat_search(runtime, sizes)
            step(target, "turns")
            figures |= await measure_turns(llm, runtime, sizes)
    return figures


async def measure_startup(target: Target, sizes: Sizes) -> Figures:
    """Start-up in fresh processes on the large database, the median of the runs."""
    runs = [
        await h.run_child("bench.backends", {"role": "startup", **target.spec()})
        for _ in range(sizes.startup_runs)
    ]
    return {
        STARTUP: statistics.median(run["start_s"] for run in runs),
        FIRST_SEARCH: statistics.median(run["first_search_s"] for run in runs),
    }


async def startup_child(target: Target) -> dict[str, float]:
    """A child: how long Runtime.start takes, and until the first chat-log search answers."""
    with h.fake_llm() as llm:
        started = time.perf_counter()
        async with h.plugin_runtime(llm, target.db_path, **target.settings()) as runtime:
            start_s = time.perf_counter() - started
            await ChatSearch(runtime, h.group_key(CHAT_GROUP_ID))("上次谁说要去杭州吃火锅来着")
            first_search_s = time.perf_counter() - started
    return {"start_s": start_s, "first_search_s": first_search_s}


def writer_scopes(index: int, memories: int) -> list[str]:
    """The memory scopes writing process `index` saves into (its own, SCOPE_MEMORIES each)."""
    count = math.ceil(memories / SCOPE_MEMORIES)
    return [h.group_key(FIRST_WRITER_SCOPE_GROUP_ID + index * 100 + i) for i in range(count)]


async def measure_two_writers(target: Target, sizes: Sizes, work_dir: Path) -> Figures:
    """Two child processes write at once, started together once both are ready: rows of
    one chat, and memories each into scopes of its own (on SQLite a process trusts that it
    alone writes the scopes it holds, memory/index.py). Their combined rates, and what the
    database holds afterwards against what they wrote."""
    spec = {**target.spec(), "rows": sizes.writer_rows, "memories": sizes.writer_memories}
    go = work_dir / f"go-{target.label}"
    ready = [work_dir / f"ready-{target.label}-{index}" for index in range(WRITERS)]
    children = [
        asyncio.create_task(
            h.run_child(
                "bench.backends",
                {**spec, "role": "writer", "index": i, "ready": str(ready[i]), "go": str(go)},
            )
        )
        for i in range(WRITERS)
    ]
    try:
        await wait_for_files(ready, children)
        await asyncio.to_thread(go.touch)
        results = await asyncio.gather(*children)
    finally:
        for child in children:
            child.cancel()
    rows_written = sum(int(r["rows"]) for r in results)
    saved = sum(int(r["saved"]) for r in results)
    stored_rows, stored_memories = await count_written(target, sizes)
    return {
        TWO_ROWS: rows_written / span(results, "rows"),
        TWO_SAVES: saved / span(results, "saves"),
        TWO_ROWS_LOST: rows_written - stored_rows,
        TWO_SAVES_LOST: saved - stored_memories,
    }


def span(results: Iterable[dict[str, Any]], what: str) -> float:
    """Seconds from the first process's start of `what` to the last one's end."""
    results = list(results)
    return max(r[f"{what}_ended"] for r in results) - min(r[f"{what}_started"] for r in results)


async def wait_for_files(paths: Sequence[Path], children: Sequence[asyncio.Task[Any]] = ()) -> None:
    """Wait until every file of `paths` exists; one of `children` that ended early raises
    its error."""
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while not all(await asyncio.to_thread(lambda: [p.exists() for p in paths])):
        for child in children:
            if child.done():
                child.result()  # its failure, or an early end
                raise RuntimeError("a writing process ended before the start")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {paths} after {READY_TIMEOUT_SECONDS} s")
        await asyncio.sleep(POLL_SECONDS)


async def count_written(target: Target, sizes: Sizes) -> tuple[int, int]:
    """The writers' chat-log rows and memories the database holds, read through the plugin."""
    with h.fake_llm() as llm:
        async with h.plugin_runtime(llm, target.db_path, **target.settings()) as runtime:
            store = h.chat_log_writer(runtime).store
            rows = await store.count_since(h.group_key(WRITERS_GROUP_ID), 0)
            service = h.memory_service(runtime)
            memories = 0
            for index in range(WRITERS):
                for scope in writer_scopes(index, sizes.writer_memories):
                    memories += await service.count(scope)
    return rows, memories


async def writer_child(spec: dict[str, Any]) -> dict[str, float]:
    """A child: once ready, wait for the go, then log rows and save memories concurrently."""
    from nonebot_plugin_aimemory.conversation.warmup import text_tools_ready

    target, index = Target.from_spec(spec), int(spec["index"])
    rng = random.Random(1000 + index)
    rows = chat_rows(rng, h.group_key(WRITERS_GROUP_ID), int(spec["rows"]))
    scopes = writer_scopes(index, int(spec["memories"]))
    batches = [h.memories(rng, SCOPE_MEMORIES, set()) for _ in scopes]
    memories = [(scope, m) for scope, batch in zip(scopes, batches, strict=True) for m in batch]
    memories = memories[: int(spec["memories"])]
    figures: dict[str, float] = {}
    with h.fake_llm() as llm:
        settings = {**target.settings(), "aimemory_chat_log_flush_seconds": 60}
        async with h.plugin_runtime(llm, target.db_path, **settings) as runtime:
            await text_tools_ready(runtime.counter)
            await asyncio.to_thread(Path(spec["ready"]).touch)
            await wait_for_files([Path(spec["go"])])

            async def log_rows() -> None:
                figures["rows_started"] = time.time()
                await write_through(h.chat_log_writer(runtime), rows)
                figures["rows_ended"] = time.time()

            async def save_memories() -> None:
                service, saved = h.memory_service(runtime), 0
                figures["saves_started"] = time.time()
                for scope, memory in memories:
                    outcome = await service.save(
                        scope, memory.content, tags=memory.tags, user_id=memory.user_id
                    )
                    saved += outcome.status == "saved"
                figures["saves_ended"], figures["saved"] = time.time(), saved

            await asyncio.gather(log_rows(), save_memories())
    return {**figures, "rows": len(rows)}


def step(target: Target, what: str) -> None:
    """A progress line."""
    print(f"[{target.label}] {what}…", flush=True)


def spaced(value: float) -> str:
    """`value` rounded, thousands apart by a space (`12 345`)."""
    return f"{value:,.0f}".replace(",", " ")


def shown(metric: Metric, value: float | None) -> str:
    """A table cell: the value in its unit."""
    if value is None or math.isnan(value):
        return "—"
    if metric.unit == "ms":
        return f"{value:.3f} ms" if value < 10 else f"{value:.1f} ms"
    if metric.unit == "s":
        return f"{value:.2f} s"
    if metric.unit == "/s":
        return f"{spaced(value)} /s"
    return f"{value:.0f}"


def ratio(sqlite: float | None, postgres: float | None) -> str:
    """PostgreSQL's value over SQLite's."""
    if sqlite is None or postgres is None or not sqlite or math.isnan(sqlite + postgres):
        return "—"
    return f"{postgres / sqlite:.2f}×"


def print_table(sizes: Sizes, sqlite: Figures, postgres: Figures) -> None:
    """The closing table, in Markdown: every metric on both backends."""
    big = f"{spaced(sizes.memories)} memories, {spaced(sizes.rows)} chat-log rows"
    print(f"\nDatabase: {big}; ratio = PostgreSQL ÷ SQLite\n")
    print("| metric | SQLite | PostgreSQL | ratio |")
    print("| --- | --- | --- | --- |")
    for metric in METRICS:
        ours, theirs = sqlite.get(metric), postgres.get(metric)
        cells = (metric.label, shown(metric, ours), shown(metric, theirs), ratio(ours, theirs))
        print(f"| {' | '.join(cells)} |")


def print_verdicts(quick: bool, by_backend: dict[str, Figures]) -> None:
    """The targets of the benches measured here, on each backend."""
    for label, figures in by_backend.items():
        checks = (
            (TURN_SMALL[0], "<=", TARGET_TURN_SMALL_MS, False),
            (TURN_FULL[0], "<=", TARGET_TURN_FULL_MS, False),
            (MEMORY_SEARCH[1], "<=", TARGET_MEMORY_SEARCH_MS, False),
            (CHAT_WRITE, ">=", TARGET_ROWS_PER_SECOND, quick),
            (CHAT_SEARCH[1], "<=", TARGET_CHAT_SEARCH_MS, quick),
        )
        for metric, relation, target, small in checks:
            value = figures[metric]
            met = value <= target if relation == "<=" else value >= target
            compared = f"{shown(metric, value)} {relation} {shown(metric, target)}"
            h.verdict(f"{label}: {metric.label} {compared}", met, quick=small)
        lost = figures[TWO_ROWS_LOST] + figures[TWO_SAVES_LOST]
        h.verdict(f"{label}: nothing lost by two writing processes (lost {lost:.0f})", lost == 0)


async def run(bench: h.Bench) -> dict[str, float] | None:
    """Fill both databases, measure each backend, then print the table and the verdicts."""
    if bench.child is not None:
        if bench.child["role"] == "startup":
            return await startup_child(Target.from_spec(bench.child))
        return await writer_child(bench.child)
    sizes = Sizes.of(bench.quick)
    sqlite = Target("SQLite", bench.work_dir / "sqlite" / "aimemory.db")
    async with postgres_database() as url:
        postgres = Target("PostgreSQL", bench.work_dir / "postgresql" / "aimemory.db", url)
        seen: set[str] = set()
        searched = h.memories(random.Random(201), SCOPE_MEMORIES, seen)
        scopes = fill_scopes(sizes.memories - SCOPE_MEMORIES)
        started = time.perf_counter()
        inserted = await insert_fill_memories(sqlite.db_path, scopes, seen)
        filled_s = time.perf_counter() - started
        print(f"filled {inserted} memories in {len(scopes)} scopes in {filled_s:.0f} s", flush=True)
        started = time.perf_counter()
        await copy_database(sqlite.db_path, url)
        print(f"copied them into PostgreSQL in {time.perf_counter() - started:.0f} s", flush=True)
        cold = scopes[: sizes.cold_scopes]
        by_backend: dict[str, Figures] = {}
        for target in (sqlite, postgres):
            figures = await measure_running(target, sizes, searched, cold)
            step(target, "start-up")
            figures |= await measure_startup(target, sizes)
            step(target, "two writing processes")
            figures |= await measure_two_writers(target, sizes, bench.work_dir)
            by_backend[target.label] = figures
    print_table(sizes, by_backend[sqlite.label], by_backend[postgres.label])
    print()
    print_verdicts(bench.quick, by_backend)
    return None


if __name__ == "__main__":
    h.main(__doc__, run)

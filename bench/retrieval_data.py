"""MemoryBank-SiliconFriend's evaluation data, read from a local copy of its `eval_data`
folder, joined with the evidence labels of `bench/memorybank_evidence.json`.

A set (cn, en) is 15 users' dated conversations with an AI companion, one exchange (the
user's utterance and the AI's reply) per turn, and probing questions per user. The labels
name, for each question, the turns that state its answer; the first characters of each
labelled utterance are checked against the data, so labels never meet a different copy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

LABELS_PATH = Path(__file__).with_name("memorybank_evidence.json")
LANGUAGES = ("cn", "en")
AnswerIn = Literal["user", "reply", "both"]
# A turn: its date (a key of the user's history) and its 0-based index within that date.
TurnKey = tuple[str, int]


@dataclass(frozen=True)
class Turn:
    """One exchange of a user's history."""

    date: str
    index: int
    utterance: str
    reply: str

    @property
    def key(self) -> TurnKey:
        """Where the turn is: (date, index within the date)."""
        return (self.date, self.index)


@dataclass(frozen=True)
class UserHistory:
    """One user's conversation, oldest turn first."""

    name: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class EvidenceTurn:
    """A turn stating (part of) an answer, and which side of the exchange states it."""

    key: TurnKey
    answer_in: AnswerIn


@dataclass(frozen=True)
class Question:
    """A probing question with its evidence: the pieces the answer needs, each stated by
    any one of its turns. No piece means the history does not answer it."""

    user: str
    index: int
    text: str
    evidence: tuple[tuple[EvidenceTurn, ...], ...]


@dataclass(frozen=True)
class LanguageSet:
    """The users and probing questions of one language."""

    name: str
    users: tuple[UserHistory, ...]
    questions: tuple[Question, ...]

    @property
    def answerable(self) -> tuple[Question, ...]:
        """Questions the history answers (the others count in no recall)."""
        return tuple(q for q in self.questions if q.evidence)


def load_labels(path: Path = LABELS_PATH) -> dict[str, Any]:
    """The evidence labels (see the file's own description of its fields)."""
    return json.loads(path.read_text(encoding="utf-8"))


def load_set(eval_data: Path, language: str, labels: dict[str, Any]) -> LanguageSet:
    """One language of `eval_data` (the dataset's folder holding cn/ and en/), labelled."""
    histories = _histories(eval_data / language / f"memory_bank_{language}.json")
    asked = _questions(eval_data / language / f"probing_questions_{language}.jsonl")
    by_user = {user.name: user for user in histories}
    questions = []
    for label in labels["sets"][language]["questions"]:
        user = by_user.get(label["user"])
        texts = asked.get(label["user"], [])
        if user is None or label["question"] >= len(texts):
            raise SystemExit(
                f"{language}: the data has no question {label['question']} of {label['user']!r}"
            )
        text = texts[label["question"]]
        if not text.startswith(label["question_snippet"]):
            raise SystemExit(f"{language}: question {label} does not match the data: {text[:40]!r}")
        evidence = tuple(
            tuple(_evidence_turn(language, user, alternative) for alternative in piece)
            for piece in label["evidence"]
        )
        questions.append(Question(user.name, label["question"], text, evidence))
    return LanguageSet(language, tuple(histories), tuple(questions))


def _histories(path: Path) -> list[UserHistory]:
    """Users in file order; the English file pads some names with spaces, the questions
    file does not, so names are stripped."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    users = []
    for name, entry in raw.items():
        turns = tuple(
            Turn(date, index, str(turn["query"]), str(turn["response"]))
            for date, exchanges in entry["history"].items()
            for index, turn in enumerate(exchanges)
        )
        users.append(UserHistory(name.strip(), turns))
    return users


def _questions(path: Path) -> dict[str, list[str]]:
    """Each user's probing questions (one JSON object per line: name -> questions)."""
    asked: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            for name, texts in json.loads(line).items():
                asked[name.strip()] = [str(text) for text in texts]
    return asked


def _evidence_turn(language: str, user: UserHistory, label: dict[str, Any]) -> EvidenceTurn:
    key: TurnKey = (label["date"], label["turn"])
    turn = next((t for t in user.turns if t.key == key), None)
    if turn is None or not turn.utterance.startswith(label["user_snippet"]):
        raise SystemExit(f"{language}: evidence {label} of {user.name!r} does not match the data")
    return EvidenceTurn(key, label["answer_in"])

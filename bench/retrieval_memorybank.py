"""MemoryBank-SiliconFriend's cn and en sets for the retrieval bench: each user's dated
exchanges as a private chat (turn i of a date at 20:00 + 2i, its reply a minute later), with
the evidence labels of bench/memorybank_evidence.json (checked against the data)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.retrieval_data import (
    NO_CATEGORY,
    Conversation,
    Dataset,
    Language,
    Message,
    MessageKey,
    Question,
    Role,
)

LABELS = Path(__file__).with_name("memorybank_evidence.json")
SETS: dict[str, Language] = {"cn": "zh", "en": "en"}
FIRST_MINUTE_HOUR = 20
# The messages stating an evidence turn's answer, by which side of the turn states it.
ROLES_STATING: dict[str, tuple[Role, ...]] = {"user": ("user",), "reply": ("assistant",)}
ROLES_STATING["both"] = ("user", "assistant")


def message_key(date: str, index: int, role: Role) -> MessageKey:
    """The key of the `role` side of turn `index` of `date`."""
    return f"{date}#{index}:{role}"


def load_memorybank(eval_data: Path, sets: Iterable[str]) -> list[Dataset]:
    """MemoryBank-SiliconFriend's `sets` (cn, en) of its `eval_data` folder, labelled."""
    labels = json.loads(LABELS.read_text(encoding="utf-8"))
    origin = labels["source"]
    source = f"MemoryBank-SiliconFriend {origin['folder']} @ {origin['commit'][:7]}"
    source += f", {LABELS.name}"
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
        conversations = tuple(users.values())
        datasets.append(Dataset(name, SETS[name], source, conversations, tuple(questions)))
    return datasets


def _conversation(user: str, entry: Any) -> Conversation:
    messages = []
    for date, exchanges in entry["history"].items():
        evening = datetime.strptime(date, "%Y-%m-%d").replace(hour=FIRST_MINUTE_HOUR)
        for index, turn in enumerate(exchanges):
            asked_at = evening + timedelta(minutes=2 * index)
            key, replied_at = f"{date}#{index}", asked_at + timedelta(minutes=1)
            mine, reply = message_key(date, index, "user"), message_key(date, index, "assistant")
            query, response = str(turn["query"]), str(turn["response"])
            messages += [
                Message(mine, key, "user", user, query, asked_at, memorable=True),
                Message(reply, key, "assistant", "", response, replied_at, memorable=False),
            ]
    return Conversation(user, "private", tuple(messages))


def _labelled(
    name: str, users: dict[str, Conversation], asked: dict[str, list[str]], label: Any
) -> Question:
    text, evidence = "", label["evidence"]
    try:
        text = asked[label["user"]][label["question"]]
        said = {m.key: m.text for m in users[label["user"]].messages}
        matches = text.startswith(label["question_snippet"]) and all(
            said[message_key(turn["date"], turn["turn"], "user")].startswith(turn["user_snippet"])
            for piece in evidence
            for turn in piece
        )
    except (KeyError, IndexError):
        matches = False
    if not matches:
        raise SystemExit(f"{name}: the label {label} does not match the data")
    pieces = tuple(
        tuple(
            message_key(turn["date"], turn["turn"], role)
            for turn in piece
            for role in ROLES_STATING[turn["answer_in"]]
        )
        for piece in evidence
    )
    return Question(label["user"], text, NO_CATEGORY, pieces)

"""LoCoMo (snap-research/locomo `data/locomo10.json`) for the retrieval bench: each
conversation as a group chat of its two people (turn j of a session at its start + j minutes),
its questions with the dialog ids they cite as evidence (ids naming no turn are left out)."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.retrieval_data import Conversation, Dataset, Message, Question, distinct_minutes

NAME = "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TABLE_ORDER = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial")
SESSION_TIME_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_SESSION = re.compile(r"session_(\d+)")
# An evidence id as written, with the slips some have: "D:11:26", "D30:05".
_DIALOG_ID = re.compile(r"D:?(\d+):0*(\d+)")


def load_locomo(path: Path, max_conversations: int | None = None) -> Dataset:
    """LoCoMo's conversations and questions from `locomo10.json`, the first
    `max_conversations` of them if given."""
    raw = path.read_bytes()
    samples: list[Any] = json.loads(raw)[:max_conversations]
    conversations, questions, dropped = [], [], 0
    for sample in samples:
        conversation = _conversation(str(sample["sample_id"]), sample["conversation"])
        keys = {message.key for message in conversation.messages}
        conversations.append(conversation)
        for qa in sample["qa"]:
            cited = [_dialog_ids(text) for text in qa.get("evidence") or []]
            said = [key for keys_cited in cited for key in keys_cited]
            dropped += sum(not ids for ids in cited) + sum(key not in keys for key in said)
            pieces = tuple((key,) for key in dict.fromkeys(k for k in said if k in keys))
            category = CATEGORIES[int(qa["category"])]
            questions.append(Question(conversation.id, str(qa["question"]), category, pieces))
    turns = sum(len(c.messages) for c in conversations)
    source = (
        f"LoCoMo {path.name} (sha256 {hashlib.sha256(raw).hexdigest()[:12]}): "
        f"{len(conversations)} conversations, {turns} turns, {len(questions)} questions; "
        f"{dropped} evidence ids naming no turn of it left out"
    )
    return Dataset(NAME, "en", source, tuple(conversations), tuple(questions), TABLE_ORDER)


def _conversation(sample_id: str, sessions: dict[str, Any]) -> Conversation:
    numbers = sorted(int(m.group(1)) for k in sessions if (m := _SESSION.fullmatch(k)))
    said: list[tuple[datetime, Any]] = []
    for number in numbers:
        start = datetime.strptime(sessions[f"session_{number}_date_time"], SESSION_TIME_FORMAT)
        turns = sessions[f"session_{number}"]
        said += [(start + timedelta(minutes=j), turn) for j, turn in enumerate(turns)]
    moments = distinct_minutes(moment for moment, _ in said)
    messages = []
    for moment, (_, turn) in zip(moments, said, strict=True):
        key, text = str(turn["dia_id"]), str(turn.get("text") or "")
        messages.append(Message(key, key, "user", str(turn["speaker"]), text, moment, True))
    return Conversation(sample_id, "group", tuple(messages))


def _dialog_ids(cited: str) -> list[str]:
    """The dialog ids in one evidence string ("D8:6; D9:17" holds two)."""
    return [f"D{m.group(1)}:{m.group(2)}" for m in _DIALOG_ID.finditer(cited)]

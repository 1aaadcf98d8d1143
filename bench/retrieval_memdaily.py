"""MemDaily (nuster1128/MemSim `messages_and_QAs`) for the retrieval bench: a user's messages
about their life and a question on each trajectory, noise infused as MemSim does (`noise_ratio`
messages per message, here other users' messages about other kinds of things), one private
chat per trajectory; the six question types are the categories, hybrid trajectories left out.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.retrieval_data import Conversation, Dataset, Message, Question, distinct_minutes

NAME = "memdaily"
# The question types by their files' name for them.
_TYPE_NAMES = ("simple", "conditional", "comparative", "aggregative", "post_processing", "noisy")
TYPES = {name: name.replace("_", "-") for name in _TYPE_NAMES}
# What a trajectory is about: MemSim's items and places come from one generator, and share
# trajectories.
FAMILIES = {"roles": "people", "events": "events", "items": "things", "places": "things"}
GRAPHS = 50  # user profiles (data_generation/graphs.json); a file's trajectories cycle them
SPEAKER = "用户"
SEED = 20261202
_FILE = re.compile(r"\d\d_(?P<type>[a-z_]+)_(?P<scenario>roles|events|items|places)\.json")
_TIME = re.compile(r"(\d{4})年(\d{2})月(\d{2})日 \S+ (\d{2}):(\d{2})")


@dataclass(frozen=True)
class Trajectory:
    """One trajectory of a MemDaily file: its user (profile), kind, messages and question."""

    id: str
    category: str
    family: str
    graph: int
    messages: tuple[Any, ...]
    question: Any


def load_memdaily(
    folder: Path, noise_ratio: int, per_category: int | None, seed: int = SEED
) -> Dataset:
    """Up to `per_category` questions of each type (all with None), drawn with `seed`, each
    its trajectory's private chat with `noise_ratio` noise messages per message."""
    trajectories = _trajectories(folder)
    rng = random.Random(seed)
    chosen: list[Trajectory] = []
    for category in TYPES.values():
        of_type = [t for t in trajectories if t.category == category]
        count = len(of_type) if per_category is None else min(per_category, len(of_type))
        chosen += sorted(rng.sample(of_type, count), key=lambda t: t.id)
    conversations, questions = [], []
    for trajectory in chosen:
        pool = [
            str(m["message"])
            for other in trajectories
            if other.family != trajectory.family and other.graph != trajectory.graph
            for m in other.messages
        ]
        conversation = _infused(trajectory, pool, noise_ratio, rng)
        conversations.append(conversation)
        steps = dict.fromkeys(int(s) for s in trajectory.question["target_step_id"])
        evidence = tuple((f"m{step}",) for step in steps)
        text = str(trajectory.question["question"])
        questions.append(Question(conversation.id, text, trajectory.category, evidence))
    rows = sum(len(c.messages) for c in conversations)
    source = (
        f"MemDaily {folder.name} (MemSim, no hybrid): {len(questions)} questions, "
        f"{rows} messages (noise {noise_ratio} per message, other users' and kinds', seed {seed})"
    )
    return Dataset(
        NAME, "zh", source, tuple(conversations), tuple(questions), tuple(TYPES.values())
    )


def _trajectories(folder: Path) -> list[Trajectory]:
    found = []
    for path in sorted(folder.glob("*.json")):
        named = _FILE.fullmatch(path.name)
        if named is None or named["type"] not in TYPES:
            continue  # a hybrid file, or another
        data: list[Any] = json.loads(path.read_text(encoding="utf-8"))
        if len(data) % GRAPHS:
            raise SystemExit(f"{path}: {len(data)} trajectories, not a multiple of {GRAPHS}")
        per_graph = len(data) // GRAPHS
        for trajectory in data:
            tid = int(trajectory["tid"])
            for question in trajectory["question_list"]:
                tqid, kind = f"{path.stem}/{tid}/{question['qid']}", TYPES[named["type"]]
                family, messages = FAMILIES[named["scenario"]], tuple(trajectory["message_list"])
                found.append(Trajectory(tqid, kind, family, tid // per_graph, messages, question))
    if not found:
        raise SystemExit(f"{folder}: no MemDaily question files (01_simple_roles.json, …)")
    return found


def _infused(
    trajectory: Trajectory, pool: Sequence[str], noise_ratio: int, rng: random.Random
) -> Conversation:
    """The trajectory's messages at drawn positions among `noise_ratio` times as many noise
    messages (MemSim's scheme); noise is said in the minutes after the message before it."""
    own = trajectory.messages
    total = (1 + noise_ratio) * len(own)
    positions = set(rng.sample(range(total), len(own)))
    noise = iter(rng.sample(list(pool), total - len(own)))
    said: list[tuple[str, str, datetime | None]] = []
    mine = iter(own)
    for position in range(total):
        if position in positions:
            message = next(mine)
            said.append((f"m{message['mid']}", str(message["message"]), _said_at(message)))
        else:
            said.append((f"n{position}", next(noise), None))
    first = next(moment for _, _, moment in said if moment is not None)
    leading = next(i for i, (_, _, moment) in enumerate(said) if moment is not None)
    moments, last = [], first - timedelta(minutes=leading + 1)
    for _, _, moment in said:
        last = moment if moment is not None else last + timedelta(minutes=1)
        moments.append(last)
    messages = tuple(
        Message(key, key, "user", SPEAKER, text, at, memorable=True)
        for (key, text, _), at in zip(said, distinct_minutes(moments), strict=True)
    )
    return Conversation(trajectory.id, "private", messages)


def _said_at(message: Any) -> datetime:
    found = _TIME.match(str(message["time"]))
    if found is None:
        raise SystemExit(f"MemDaily: a message time not understood: {message['time']!r}")
    year, month, day, hour, minute = (int(part) for part in found.groups())
    return datetime(year, month, day, hour, minute)

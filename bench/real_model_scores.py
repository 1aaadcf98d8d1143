"""The real-model bench's figures from a run's records: what was saved (and whether it was
worth saving), how turns ended, and what they cost."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench import harness as h
from bench.real_model_proxy import ROLES, Exchange, Usage
from bench.real_model_remember import RememberRun, squeezed
from bench.real_model_script import Script
from bench.real_model_turns import (
    TurnRecord,
    answered,
    failure_notices,
    looks_like_json_or_tool_call,
    looks_like_memory_format,
    stock_replies,
    writes_a_tool_call,
)

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

# What the prompts show as an example of a memory: never a memory of this chat.
EXAMPLE_MARKS = ("12345", "小明(12345)")
EXAMPLE_PROMPTS = ("EXTRACT_FORMAT", "REVIEW_FORMAT", "MEMORY_NOTE")
EXAMPLE_CONTENT = re.compile(r'"content"\s*:\s*"([^"]+)"')
COPIED_MIN_CHARS = 6
IDENTIFIER = re.compile(r"[\"A-Za-z_:, ]+")


@dataclass
class Saves:
    """What the plugin saved in the chat's scopes, against what it should have."""

    memories: int
    # Memories holding none of the script's facts: saved from chit-chat, steering or the
    # bot's own words (what the target of <= 10 per 100 chit-chat turns counts).
    chit_chat_saves: list[str]
    chit_chat_turns: int
    addressed_chit_chat_turns: int
    remember_facts: int
    remember_saved: int
    remember_right_person: int
    steering_saved: list[str]
    copied: list[str]
    naming_tools: list[str]
    folded: int
    folded_kept: int

    @property
    def per_100_chit_chat(self) -> float:
        """Memories of no fact saved per 100 chit-chat turns (addressed small talk and
        unaddressed)."""
        return 100 * len(self.chit_chat_saves) / max(1, self.chit_chat_turns)

    @property
    def per_100_addressed_chit_chat(self) -> float:
        """Memories of no fact saved per 100 addressed small-talk turns."""
        return 100 * len(self.chit_chat_saves) / max(1, self.addressed_chit_chat_turns)


def saves_of(run: RememberRun, script: Script) -> Saves:
    """The figures of what `run` (the plugin's) saved."""
    memories = run.memories
    steps = script.steps
    chit_chat = sum(1 for step in steps if step.kind in ("chat", "ambient"))
    remember = [fact for fact in script.facts if fact.asked_to_remember]
    saved = [f for f in remember if holding(memories, f.value)]
    right = [
        f
        for f in saved
        if any(
            about(scope, record, f.member.user_id, f.member.name)
            for scope, record in holding(memories, f.value)
        )
    ]
    steering = [s.marker for s in script.steerings if holding(memories, s.marker)]
    folded = [i for i, kept in enumerate(run.verbatim_when_asked) if not kept]
    kept = [
        i
        for i in folded
        if squeezed(script.facts[i].value) in squeezed(run.summary)
        or holding(memories, script.facts[i].value)
    ]
    of_facts = {id(record) for f in script.facts for _, record in holding(memories, f.value)}
    return Saves(
        memories=len(memories),
        chit_chat_saves=[
            f"{record.content} [{record.provenance.origin or record.source}]"
            for _, record in memories
            if id(record) not in of_facts
        ],
        chit_chat_turns=chit_chat,
        addressed_chit_chat_turns=sum(1 for step in steps if step.kind == "chat"),
        remember_facts=len(remember),
        remember_saved=len(saved),
        remember_right_person=len(right),
        steering_saved=steering,
        copied=copied_examples(memories, script.said),
        naming_tools=[
            record.content
            for _, record in memories
            if writes_a_tool_call(record.content, run.tool_names())
        ],
        folded=len(folded),
        folded_kept=len(kept),
    )


def holding(
    memories: Sequence[tuple[str, MemoryRecord]], value: str
) -> list[tuple[str, MemoryRecord]]:
    """The memories whose content holds `value` (case and spaces ignored)."""
    wanted = squeezed(value)
    return [(scope, record) for scope, record in memories if wanted in squeezed(record.content)]


def about(scope: str, record: MemoryRecord, user_id: int, name: str) -> bool:
    """Whether a memory is about the member: theirs by QQ number, naming them, or in their
    personal scope."""
    from nonebot_plugin_aimemory.scopes import Scope

    return (
        record.user_id == str(user_id)
        or str(user_id) in record.content
        or name.lower() in record.content.lower()
        or scope == Scope.person(user_id).key
    )


def example_texts() -> list[str]:
    """The prompts that show example memories (those that exist now)."""
    from nonebot_plugin_aimemory import prompts

    found = (getattr(prompts, name, None) for name in EXAMPLE_PROMPTS)
    return [text for text in found if isinstance(text, str)]


def copied_examples(memories: Sequence[tuple[str, MemoryRecord]], said: str) -> list[str]:
    """Memories that copy a prompt's example: its QQ number, an example content, or a run
    of at least COPIED_MIN_CHARS characters of an example prompt nobody said in the chat."""
    examples = example_texts()
    contents = {m for text in examples for m in EXAMPLE_CONTENT.findall(text) if m != "…"}
    copied = []
    for _, record in memories:
        content = record.content
        shared = [longest_common_run(content, text) for text in examples]
        taken = [run for run in shared if is_example_text(run) and run not in said]
        if any(mark in content for mark in EXAMPLE_MARKS) or content in contents or taken:
            copied.append(content)
    return copied


def is_example_text(run: str) -> bool:
    """A shared run long enough to be copied, and not just a tool's or field's name."""
    return len(run.strip()) >= COPIED_MIN_CHARS and not IDENTIFIER.fullmatch(run.strip())


def longest_common_run(first: str, second: str) -> str:
    """The longest run of characters both texts hold."""
    best, best_end = 0, 0
    previous = [0] * (len(second) + 1)
    for i, char in enumerate(first, start=1):
        current = [0] * (len(second) + 1)
        for j, other in enumerate(second, start=1):
            if char == other:
                current[j] = previous[j - 1] + 1
                if current[j] > best:
                    best, best_end = current[j], i
        previous = current
    return first[best_end - best : best_end]


@dataclass
class Answers:
    """How the addressed turns ended."""

    turns: int
    answered: int
    json_like: list[TurnRecord]
    memory_like: list[TurnRecord]
    notices: list[TurnRecord]
    timed_out: int
    stock: list[TurnRecord]
    rounds: list[int]
    invented: list[str]
    repeated: int
    as_text: int
    rejected: int

    def share(self, count: int) -> float:
        """`count` as a share of the turns."""
        return count / max(1, self.turns)


def answers_of(turns: Sequence[TurnRecord], rejected: int) -> Answers:
    """The figures of how `turns` ended."""
    from nonebot_plugin_aimemory import texts

    notices = failure_notices()
    timeout_notice = getattr(texts, "LLM_TIMEOUT", "")
    return Answers(
        turns=len(turns),
        answered=sum(1 for t in turns if answered(t, notices)),
        json_like=[
            t
            for t in turns
            if any(looks_like_json_or_tool_call(r, t.offered_tools()) for r in t.replies)
        ],
        memory_like=[t for t in turns if any(looks_like_memory_format(r) for r in t.replies)],
        notices=[t for t in turns if any(r.strip() in notices for r in t.replies)],
        timed_out=sum(1 for t in turns if timeout_notice and timeout_notice in t.replies),
        stock=stock_replies(turns, notices),
        rounds=[t.tool_rounds() for t in turns],
        invented=[name for t in turns for name in t.invented_tools()],
        repeated=sum(t.repeated_calls() for t in turns),
        as_text=sum(t.tool_calls_as_text() for t in turns),
        rejected=rejected,
    )


@dataclass
class Cost:
    """Tokens per addressed turn by role, and wall-clock per turn."""

    label: str
    turns: int
    usage: dict[str, Usage] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)

    def per_turn(self, role: str) -> tuple[float, float, float | None]:
        """Mean prompt, completion and cached prompt tokens of `role` per turn."""
        usage, turns = self.usage.get(role, Usage()), max(1, self.turns)
        cached = None if usage.cached is None else usage.cached / turns
        return usage.prompt / turns, usage.completion / turns, cached

    def p(self, fraction: float) -> float:
        """A percentile of the turns' wall-clock seconds."""
        return h.percentile(self.seconds, fraction)


def cost_of(label: str, turns: Sequence[TurnRecord], exchanges: Iterable[Exchange]) -> Cost:
    """Every exchange of a run (background ones too) over its addressed turns."""
    usage: dict[str, Usage] = dict.fromkeys(ROLES, Usage())
    for exchange in exchanges:
        usage[exchange.role] = usage.get(exchange.role, Usage()) + exchange.usage()
    return Cost(label, len(turns), usage, [t.seconds for t in turns])


def mean(values: Sequence[float]) -> float:
    """The mean (0 of nothing)."""
    return statistics.fmean(values) if values else 0.0

"""The real-model bench's figures from a run's records: what was saved (and whether it was
worth saving), how turns ended (tool rounds, invented tools, repeated calls, calls written as
text, replies that are JSON, memory lines, failure notices or stock replies), and the cost."""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

from bench import harness as h
from bench.real_model_plugin import TurnRecord
from bench.real_model_proxy import ROLES, Exchange, Usage
from bench.real_model_remember import RememberRun, squeezed
from bench.real_model_script import Member, Script

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

# The memories a run left, each with its scope.
Memories = Sequence[tuple[str, "MemoryRecord"]]
# What the prompts show as an example of a memory: never a memory of this chat.
EXAMPLE_MARKS = ("12345", "小明(12345)")
EXAMPLE_PROMPTS = ("EXTRACT_FORMAT", "REVIEW_FORMAT", "MEMORY_NOTE")
EXAMPLE_CONTENT = re.compile(r'"content"\s*:\s*"([^"]+)"')
COPIED_MIN_CHARS = 6
IDENTIFIER = re.compile(r"[\"A-Za-z_:, ]+")
# A tool call written into the text instead of the API's tool_calls field.
TEXT_TOOL_CALL = re.compile(r'"name"\s*:.*"arguments"\s*:|<tool_call>|<tool_response>', re.DOTALL)
# A line as the memory tools and the injected block show memories (`#ab3d 内容`).
MEMORY_ID_LINE = re.compile(r"^\s*#[0-9a-z]{2,12}\s", re.MULTILINE)
MEMORY_FORMAT_STARTS = ("记忆更新", "【可能相关的长期记忆】")
# What a QQ user is told when a turn fails (nonebot_plugin_aimemory/texts/notices.py).
FAILURE_NOTICE_NAMES = (
    *("NOT_CONFIGURED", "LLM_UNAVAILABLE", "LLM_REFUSED", "LLM_ACCOUNT_PROBLEM"),
    *("LLM_REQUEST_REJECTED", "LLM_TIMEOUT", "TOO_LONG", "LLM_EMPTY", "TURN_FAILED"),
    *("BURST_TOO_LONG", "DATABASE_NOT_READY", "DAILY_QUOTA_USED_UP"),
)


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
    kinds = [step.kind for step in script.steps]
    remember = [fact for fact in script.facts if fact.asked_to_remember]
    saved = [f for f in remember if holding(memories, f.value)]
    right = [f for f in saved if any(about(s, r, f.member) for s, r in holding(memories, f.value))]
    steering = [s.marker for s in script.steerings if holding(memories, s.marker)]
    verbatim = zip(script.facts, run.verbatim_when_asked, strict=True)
    folded = [fact.value for fact, kept in verbatim if not kept]
    kept = [v for v in folded if squeezed(v) in squeezed(run.summary) or holding(memories, v)]
    of_facts = {id(record) for f in script.facts for _, record in holding(memories, f.value)}
    return Saves(
        memories=len(memories),
        chit_chat_saves=[
            f"{record.content} [{record.provenance.origin or record.source}]"
            for _, record in memories
            if id(record) not in of_facts
        ],
        chit_chat_turns=kinds.count("chat") + kinds.count("ambient"),
        addressed_chit_chat_turns=kinds.count("chat"),
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


def holding(memories: Memories, value: str) -> list[tuple[str, MemoryRecord]]:
    """The memories whose content holds `value` (case and spaces ignored)."""
    wanted = squeezed(value)
    return [(scope, record) for scope, record in memories if wanted in squeezed(record.content)]


def about(scope: str, record: MemoryRecord, member: Member) -> bool:
    """Whether a memory is about the member: theirs by QQ number, naming them, or in their
    personal scope."""
    from nonebot_plugin_aimemory.scopes import Scope

    qq, content = str(member.user_id), record.content
    named = qq in content or member.name.lower() in content.lower()
    return record.user_id == qq or named or scope == Scope.person(member.user_id).key


def named_texts(module: object, names: Iterable[str]) -> tuple[str, ...]:
    """The texts `module` holds under `names` (the names that exist now)."""
    found = (getattr(module, name, None) for name in names)
    return tuple(text for text in found if isinstance(text, str) and text)


def copied_examples(memories: Memories, said: str) -> list[str]:
    """Memories that copy a prompt's example: its QQ number, an example content, or a run
    of at least COPIED_MIN_CHARS characters of an example prompt nobody said in the chat."""
    from nonebot_plugin_aimemory import prompts

    examples = named_texts(prompts, EXAMPLE_PROMPTS)
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
    """The longest run of characters both texts hold (the earliest in `first`)."""
    match = SequenceMatcher(None, first, second, autojunk=False).find_longest_match()
    return first[match.a : match.a + match.size]


@dataclass
class Answers:
    """How the addressed turns ended."""

    turns: int
    answered: int
    json_like: list[TurnRecord]
    memory_like: list[TurnRecord]
    notices: list[TurnRecord]
    timed_out: int
    stock: list[TurnRecord]  # to any other message
    stock_to_questions: list[TurnRecord]  # the target's: the message was a question
    rounds: list[int]
    invented: list[str]
    repeated: int
    as_text: int
    rejected: int

    def share(self, count: int) -> float:
        """`count` as a share of the turns."""
        return count / max(1, self.turns)


def answers_of(turns: Sequence[TurnRecord], rejected: int) -> Answers:
    """The figures of how `turns` ended. The target counts a reply repeated for different
    questions (issue #36); the same "好的，记住了。" to two requests to remember is counted
    beside it."""
    from nonebot_plugin_aimemory import texts
    from nonebot_plugin_aimemory.text import is_question

    notices = named_texts(texts, FAILURE_NOTICE_NAMES)
    timeout_notice = getattr(texts, "LLM_TIMEOUT", "")
    return Answers(
        turns=len(turns),
        answered=sum(
            1 for t in turns if any(r.strip() and r.strip() not in notices for r in t.replies)
        ),
        json_like=[
            t
            for t in turns
            if any(looks_like_json_or_tool_call(r, offered_tools(t)) for r in t.replies)
        ],
        memory_like=[t for t in turns if any(looks_like_memory_format(r) for r in t.replies)],
        notices=[t for t in turns if any(r.strip() in notices for r in t.replies)],
        timed_out=sum(1 for t in turns if timeout_notice and timeout_notice in t.replies),
        stock=stock_replies(turns, notices),
        stock_to_questions=[t for t in stock_replies(turns, notices) if is_question(t.message)],
        rounds=[max(0, len(t.main()) - 1) for t in turns],
        invented=[name for t in turns for name in invented_tools(t)],
        repeated=sum(repeated_calls(t) for t in turns),
        as_text=sum(
            writes_a_tool_call(e.content, offered_tools(t)) for t in turns for e in t.main()
        ),
        rejected=rejected,
    )


def offered_tools(turn: TurnRecord) -> set[str]:
    """The names of the tools the turn's main requests offered."""
    return {name for e in turn.main() for name in e.tool_names}


def invented_tools(turn: TurnRecord) -> list[str]:
    """Tool calls naming a tool the request did not offer."""
    return [name for e in turn.main() for name, _ in e.tool_calls if name not in e.tool_names]


def repeated_calls(turn: TurnRecord) -> int:
    """Tool calls identical (name and parsed arguments) to an earlier one of the turn."""
    calls = Counter((n, canonical(a)) for e in turn.main() for n, a in e.tool_calls)
    return sum(count - 1 for count in calls.values())


def canonical(arguments: str) -> str:
    """Arguments as sorted JSON when they parse, else as sent."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return arguments


def writes_a_tool_call(text: str, tool_names: Iterable[str]) -> bool:
    """Text holding a tool call or tool response, or naming an offered tool (no reply to a
    QQ user has a reason to say `memory_search`)."""
    return bool(TEXT_TOOL_CALL.search(text)) or any(name in text for name in tool_names)


def looks_like_json_or_tool_call(text: str, tool_names: Iterable[str] = ()) -> bool:
    """A reply that is a JSON value, or a tool call or tool response written as text."""
    stripped = text.strip()
    if writes_a_tool_call(stripped, tool_names):
        return True
    if not stripped.startswith(("{", "[")):
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return stripped.startswith("{") and '":' in stripped
    return True


def looks_like_memory_format(text: str) -> bool:
    """A reply that reads like the memory tools' output or the injected memory block (its
    lines' marks included: `(关于 20001)`, `（小明(20001) 说，12-07）`)."""
    from nonebot_plugin_aimemory.texts import NOTE_MARKS

    stripped = text.strip()
    return (
        stripped.startswith(MEMORY_FORMAT_STARTS)
        or bool(MEMORY_ID_LINE.search(stripped))
        or "<tool_response>" in stripped
        or bool(NOTE_MARKS.search(stripped))
    )


def stock_replies(turns: Iterable[TurnRecord], notices: Sequence[str] = ()) -> list[TurnRecord]:
    """Turns whose reply repeats, word for word, an earlier turn's reply to a different
    message (the plugin's failure `notices` are counted as such, not here)."""
    first_message: dict[str, set[str]] = {}
    stock = []
    for turn in turns:
        reply = turn.reply.strip()
        if not reply or reply in notices:
            continue
        earlier = first_message.setdefault(reply, set())
        if earlier - {turn.message}:
            stock.append(turn)
        earlier.add(turn.message)
    return stock


@dataclass
class Cost:
    """Tokens per addressed turn by role, and wall-clock per turn."""

    label: str
    turns: int
    usage: dict[str, Usage] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)

    def cell(self, role: str) -> str:
        """Mean prompt, completion and cached prompt tokens of `role` per turn, `p/c/cached`."""
        usage, turns = self.usage.get(role, Usage()), max(1, self.turns)
        cached = "-" if usage.cached is None else f"{usage.cached / turns:.0f}"
        return f"{usage.prompt / turns:.0f}/{usage.completion / turns:.0f}/{cached}"

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

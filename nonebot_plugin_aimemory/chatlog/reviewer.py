"""The background memory reviewer: now and then, turn a session's recent chat log into
long-term memories (through the same rules as every other write)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

from .. import prompts
from ..engine import LLMClient, Message, attributed_to, background_work
from ..memory import MemoryService, OwnerCopies, attribution, grounding
from ..scopes import Scope
from ..store import ChatLogStore, ChatRow, Provenance
from ..text import cut_line, fit_lines, parse_json_object
from .lines import format_row

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_ROWS = 50
MAX_CHARS = 8000
MAX_OPS = 3
MIN_PARTIAL_ROW_CHARS = 200


@dataclass(frozen=True, slots=True)
class Shown:
    """The chat-log rows a review was shown (of the chat `chat`), and which of them the
    bot wrote."""

    rows: dict[int, ChatRow]
    bots_rows: set[int]
    chat: str

    @property
    def row_ids(self) -> set[int]:
        """The ids of the rows shown."""
        return set(self.rows)

    def provenance(self, content: str, evidence: list[int]) -> Provenance:
        """A memory the review drew from `evidence`: said by the author of those rows when
        they are one person (by a quote's or a forwarded line's author when it holds the
        content; by whom the content quotes when they wrote one of the rows), never by
        the bot."""
        lines = [
            (row.text, attribution.person_of(row.speaker_id, row.speaker_name))
            for row in (self.rows[i] for i in evidence if i in self.rows)
            if row.id not in self.bots_rows
        ]
        quoted = grounding.said_by_id(content)
        said_by = next((p for _, p in lines if quoted and p.user_id == quoted), None)
        said_by = said_by or attribution.author_of_evidence(content, lines)
        return Provenance("review", said_by=said_by, chat=self.chat)

    def members_lines(self, evidence: list[int]) -> list[str]:
        """What the members said in the `evidence` rows, each after its speaker's name
        (the bot's rows are nobody's)."""
        rows = [self.rows[i] for i in evidence if i in self.rows and i not in self.bots_rows]
        people = [attribution.person_of(row.speaker_id, row.speaker_name) for row in rows]
        return [
            grounding.line_of(person.name, person.user_id, row.text)
            for person, row in zip(people, rows, strict=True)
        ]


@dataclass(slots=True)
class ReviewOutcome:
    """What one review did."""

    created: int = 0
    updated: int = 0
    last_row: int = 0
    rejected: list[str] = field(default_factory=list)


class MemoryReviewer:
    """Asks the review model for memory operations and applies the valid ones."""

    def __init__(
        self,
        llm: LLMClient,
        memory: MemoryService,
        chat_log: ChatLogStore,
        *,
        persona: str | Callable[[str], str],
        zone: tzinfo,
        personal: bool = True,
    ) -> None:
        self.llm = llm
        self.memory = memory
        self.chat_log = chat_log
        # A fact about a member, in their words, goes to their private chat too.
        self.saves = OwnerCopies(memory, personal=personal)
        # The prompt of the persona a scope belongs to (`g:1#猫娘` reviews as 猫娘).
        self.persona_of_scope = persona if callable(persona) else lambda _scope: persona
        self.zone = zone

    async def review(self, scope: str, after_row: int) -> ReviewOutcome:
        """Review rows after `after_row`; raises LLMError when the model cannot be reached.
        Its model calls (the saves' embeddings and guard checks too) are counted for the
        scope's chat, and give way to members' calls."""
        with attributed_to(Scope.parse(scope).chat_key), background_work():
            return await self._review(scope, after_row)

    async def _review(self, scope: str, after_row: int) -> ReviewOutcome:
        # A persona's scope reviews its chat's log (shared by every persona and account) on
        # its own: its own last reviewed row, its own memories, its own prompt.
        chat = Scope.parse(scope).log_chat
        chat_key = str(chat)
        fetched = await self.chat_log.since(chat_key, after_row, MAX_ROWS)
        # A refused row would have the review refused too, again and again.
        rows, log = _shown_log([row for row in fetched if not row.refused], self.zone)
        if not rows:
            return ReviewOutcome(last_row=fetched[-1].id if fetched else after_row)
        memories = await self.memory.list(scope)
        system = prompts.review_prompt(
            self.persona_of_scope(scope), in_group=chat.is_group, max_ops=MAX_OPS
        )
        completion = await self.llm.complete(
            [
                Message("system", system),
                Message("user", prompts.review_request(memories, log)),
            ],
            context=f"review {scope}",
        )
        outcome = ReviewOutcome(last_row=fetched[-1].id)
        bots = {row.id for row in rows if row.role == "assistant"}
        shown = Shown({row.id: row for row in rows}, bots, chat_key)
        await self._apply(scope, completion.message.text, shown, outcome)

        logger.info(
            "review of %s: %d created, %d updated, %d rejected",
            scope,
            outcome.created,
            outcome.updated,
            len(outcome.rejected),
        )
        for reason in outcome.rejected:
            logger.info("review of %s: skipped %s", scope, reason)
        return outcome

    async def _apply(self, scope: str, answer: str, shown: Shown, outcome: ReviewOutcome) -> None:
        data = parse_json_object(answer)
        ops = data.get("ops") if data else None
        if not isinstance(ops, list):
            outcome.rejected.append(f"no ops in answer: {answer[:200]!r}")
            logger.warning("reviewer answer for %s had no valid ops: %r", scope, answer[:300])
            return
        # A model that writes more than it was allowed pads with noops and repeats: the
        # limit counts only the operations that would change something.
        changes = _distinct_changes(ops)
        for op in changes[:MAX_OPS]:
            await self._apply_one(scope, op, shown, outcome)
        if len(changes) > MAX_OPS:
            outcome.rejected.append(f"{len(changes) - MAX_OPS} ops over the limit")

    async def _apply_one(self, scope: str, op: Any, shown: Shown, outcome: ReviewOutcome) -> None:
        if not isinstance(op, dict):
            outcome.rejected.append(f"not an object: {op!r}")
            return
        kind = op.get("op")
        evidence = _evidence(op.get("evidence"), shown.row_ids)
        content = op.get("content")
        if kind == "noop":
            return
        if isinstance(content, str) and prompts.copies_the_format(content):
            outcome.rejected.append(f"copies the format: {content[:50]!r}")
            return
        if evidence and set(evidence) <= shown.bots_rows:
            # What the bot said is no fact about anyone: a small model filed its own
            # refusal ("请使用正式的语言交流…") as a member's memory.
            outcome.rejected.append(f"only the bot's own words: {str(content)[:50]!r}")
            return
        if kind == "create" and isinstance(content, str) and content.strip():
            lines = shown.members_lines(evidence)
            await self._create(
                scope, op, self._grounded(content, lines, outcome), evidence, shown, outcome
            )
            return
        if kind == "update" and isinstance(op.get("id"), str) and isinstance(content, str):
            await self._update(scope, op["id"], content, evidence, shown, outcome)
            return
        outcome.rejected.append(f"invalid op: {str(op)[:100]}")

    @staticmethod
    def _grounded(content: str, lines: list[str], outcome: ReviewOutcome) -> str | None:
        """`content` as it may be kept, drawn from chat `lines` (grounding.py), whether it
        is new or rewrites a memory; None (noted in `outcome`) when it may not."""
        kept = grounding.Grounds.of(lines).keep(content)
        if kept is None:
            outcome.rejected.append(f"not what the rows state: {content[:50]!r}")
        return kept

    async def _create(
        self,
        scope: str,
        op: dict[str, Any],
        content: str | None,
        evidence: list[int],
        shown: Shown,
        outcome: ReviewOutcome,
    ) -> None:
        if content is None:
            return
        tags = op.get("tags") if isinstance(op.get("tags"), list) else None
        provenance = shown.provenance(content, evidence)
        saved = await self.saves.save(
            scope,
            content,
            tags=tags,
            user_id=grounding.said_by_id(content)
            or (str(op["user_id"]) if op.get("user_id") else None),
            source="review",
            evidence=evidence,
            provenance=provenance,
        )
        if saved.status == "saved":
            outcome.created += 1
        else:
            outcome.rejected.append(f"create refused ({saved.status}): {content[:50]!r}")

    async def _update(
        self,
        scope: str,
        memory_id: str,
        content: str,
        evidence: list[int],
        shown: Shown,
        outcome: ReviewOutcome,
    ) -> None:
        """Rewrite a memory of `scope` as the rows and the memory itself hold it, naming
        everyone it named (the real small model's reviewer dropped who it was about)."""
        stored = await self.memory.get(scope, memory_id)
        lines = shown.members_lines(evidence) + ([stored.content] if stored is not None else [])
        rewritten = self._grounded(content, lines, outcome)
        if rewritten is None:
            return
        if stored is not None and not grounding.keeps_whom_it_is_about(stored.content, rewritten):
            outcome.rejected.append(
                f"update {memory_id!r} drops whom it is about: {rewritten[:50]!r}"
            )
            return
        # The id is looked up in this scope only: another scope's id is simply unknown.
        updated = await self.memory.update(
            scope, memory_id, content=rewritten, add_evidence=evidence
        )
        if updated.status == "updated" and updated.changed:
            outcome.updated += 1
            if stored is not None:
                await self.saves.follow(scope, stored, rewritten)
        elif updated.status == "updated":
            outcome.rejected.append(f"update {memory_id!r} changed nothing")
        else:
            outcome.rejected.append(f"update {memory_id!r} refused ({updated.status})")


def _distinct_changes(ops: list[Any]) -> list[Any]:
    """The operations that would change something (not noops), each content once; what
    is not an object is kept for `_apply_one` to reject with its reason."""
    seen: set[str] = set()
    changes: list[Any] = []
    for op in ops:
        if isinstance(op, dict):
            if op.get("op") == "noop":
                continue
            content = op.get("content")
            if isinstance(content, str):
                if content.strip() in seen:
                    continue
                seen.add(content.strip())
        changes.append(op)
    return changes


def _shown_log(rows: list[ChatRow], zone: tzinfo) -> tuple[list[ChatRow], str]:
    """The newest rows whose `[#id] [time] speaker：text` lines fit in MAX_CHARS, and those
    lines, oldest first; the line where the budget runs out is shortened rather than
    dropped when a useful part of it still fits."""

    def shorten(line: str, room_chars: int, rank: int) -> str | None:
        if rank == 0 or room_chars >= MIN_PARTIAL_ROW_CHARS:
            return cut_line(line, room_chars)
        return None

    lines = [f"[#{row.id}] {format_row(row, zone)}" for row in rows]
    fitted = fit_lines(lines, MAX_CHARS, newest=True, shorten=shorten)
    return [rows[i] for i in fitted.indices], fitted.text


def _evidence(raw: Any, row_ids: set[int]) -> list[int]:
    """Cited rows that were really shown; all shown rows when the citation is unusable."""
    if isinstance(raw, list):
        numbers = [str(x).lstrip("#") for x in raw if isinstance(x, int | str)]
        cited = [int(x) for x in numbers if x.isdigit() and int(x) in row_ids]
        if cited:
            return cited
    return sorted(row_ids)

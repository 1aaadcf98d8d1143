"""Before the window is folded, ask the compressor model for durable facts in the folded
messages and save them as memories, in the background, never delaying a reply."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..engine import (
    Background,
    LLMClient,
    LLMError,
    Message,
    Voice,
    attributed_to,
    background_work,
    chunk_lines,
    render_transcript,
)
from ..prompts import (
    EXTRACT_PROMPT,
    EXTRACT_SPEAKER_PROMPT,
    SPEAKER_LINES_HEADER,
    TRANSCRIPT_ASSISTANT_LABEL,
    copies_the_format,
)
from ..scopes import Scope
from ..store import Person, Provenance
from ..text import json_objects, parse_json_object
from . import attribution, grounding
from .owner_copies import OwnerCopies
from .service import MemoryService

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_TRANSCRIPT_CHARS = 12_000  # one extraction request
MAX_CHUNKS = 4  # per fold; beyond that only the newest messages are examined
# Per group fold, asked member by member, those who stated most first.
MAX_SPEAKER_REQUESTS = 8
# What is left of a line that only asks, requests or orders the bot (grounding.statements).
_NOT_STATED = " ，,。.！!？?\n"
MAX_FACTS = 10  # per extraction request
# At shutdown, extractions in flight get this long before they are cancelled.
DRAIN_GRACE_SECONDS = 3.0


class FactExtractor:
    """A PreCompact listener; saving goes through the memory rules like any other write."""

    def __init__(
        self,
        llm: LLMClient,
        memory: MemoryService,
        memory_key: Callable[[str], str] = lambda window_key: window_key,
        *,
        personal: bool = True,
    ) -> None:
        self.llm = llm
        self.memory = memory
        # A fact about a member, in their words, goes to their private chat too.
        self.saves = OwnerCopies(memory, personal=personal)
        # A window's facts go to its memories, the chat's whichever account (placement.py).
        self.memory_key = memory_key
        self._background = Background("fact extraction")

    async def on_pre_compact(self, key: str, messages: Sequence[Message]) -> None:
        """Start extraction and return at once: compression does not wait for it."""
        self._background.spawn(self.extract_and_save(key, messages))

    async def extract_and_save(self, scope: str, messages: Sequence[Message]) -> int:
        """Returns how many new memories were saved. A group's fold is examined member by
        member (`speaker_requests`); any other, in chunks of at most `MAX_TRANSCRIPT_CHARS`,
        oldest first, one extraction request each. Their model calls (the saves' guard
        checks too) are counted for the scope's chat, and give way to members' turns."""
        fold = _Fold.of(scope, messages)
        if fold.in_group and fold.voices:
            requests = speaker_requests(fold.voices)  # none when nobody stated anything
        else:
            lines = render_transcript(messages, assistant_label=TRANSCRIPT_ASSISTANT_LABEL)
            requests = [(EXTRACT_PROMPT, chunk) for chunk in transcript_chunks(lines)]
        saved = 0
        with attributed_to(Scope.parse(scope).chat_key), background_work():
            for index, (prompt, transcript) in enumerate(requests, 1):
                part = f"{index}/{len(requests)}"
                saved += await self._extract(self.memory_key(scope), prompt, transcript, part, fold)
        logger.info("saved %d memories from messages folded in %s", saved, scope)
        return saved

    async def _extract(
        self, scope: str, prompt: str, transcript: str, part: str, fold: _Fold
    ) -> int:
        """Ask for the facts of one transcript and save them; returns how many were new."""
        try:
            completion = await self.llm.complete(
                [Message("system", prompt), Message("user", transcript)],
                context=f"extract {scope} {part}",
            )
        except LLMError as exc:
            # The other chunks may still get through: a timeout is often about one request.
            logger.info(
                "fact extraction (%s) before compression failed for %s: %s", part, scope, exc
            )
            return 0
        saved = 0
        for fact in parse_facts(completion.message.text)[:MAX_FACTS]:
            content = fold.grounds.keep(fact["content"])
            if content is None:
                logger.info(
                    "extraction for %s: skipped %r, not what the chat states",
                    scope,
                    fact["content"][:50],
                )
                continue
            outcome = await self.saves.save(
                scope,
                content,
                tags=fact.get("tags"),
                user_id=grounding.said_by_id(content) or fact.get("user_id"),
                source="extract",
                provenance=fold.provenance(content),
            )
            saved += outcome.status == "saved"
        return saved

    async def drain(self) -> None:
        """Wait for extractions still running (used at shutdown), at most
        DRAIN_GRACE_SECONDS; a model call still in flight then is cancelled."""
        await self._background.settle(DRAIN_GRACE_SECONDS)


@dataclass(frozen=True, slots=True)
class _Fold:
    """The folded messages as a fact's provenance needs them: whose words they hold, and
    the chat they were said in."""

    voices: list[Voice]
    chat: str
    in_group: bool
    # What the senders said, one voice a line after its name (the messages as they are
    # when none has a sender's line): what a fact drawn from the fold must hold.
    grounds: grounding.Grounds

    @classmethod
    def of(cls, window_key: str, messages: Sequence[Message]) -> _Fold:
        """The voices of the folded messages of the window `window_key` (the bot's own
        words are nobody's: they are left out), and the grounds their words give."""
        where = Scope.parse(window_key)
        friend = Person(where.id) if where.is_friend else None
        said = [message.text for message in messages if message.role == "user"]
        voices = attribution.folded_voices(said, friend)
        lines = [grounding.line_of(v.name, v.user_id, v.text) for v in voices] or said
        return cls(voices, where.log_chat.key, where.is_group, grounding.Grounds.of(lines))

    def provenance(self, fact: str) -> Provenance:
        """A fact drawn from the fold: said by the sender of the words it matches best."""
        said_by = attribution.speaker_of(attribution.best_voice(fact, self.voices))
        return Provenance("extract", said_by=said_by, chat=self.chat)


def speaker_requests(voices: Sequence[Voice]) -> list[tuple[str, str]]:
    """A group fold's extraction requests, member by member: each member who stated
    something in it gets their own words alone, in chunks as `transcript_chunks` cuts
    them; those who stated most come first, at most MAX_SPEAKER_REQUESTS requests in all.
    Everyone's chat and the bot's answers around a fact said in passing drown it for a
    small model (the real 1.5B kept 3 of 10 such facts from whole folds, 9 of 10 so), and
    so do their own questions and orders: given "从现在起你只能用英文回答…" beside "最近一直
    在听新裤子的歌，我最喜欢这个乐队了", it filed the order and missed the band, so only the
    lines that state something are sent, and a member who only asked or gave orders gets
    no request. A quote or a forwarded line is the context of what its sender said, and
    its author's at their own fold."""
    said: dict[tuple[str, str], list[str]] = {}
    stated: dict[tuple[str, str], int] = {}
    for voice in voices:
        statement = grounding.statements(voice.text).strip(_NOT_STATED)
        if voice.how == "said" and voice.user_id and statement:
            who = (voice.name, voice.user_id)
            said.setdefault(who, []).append(voice.text.strip())
            stated[who] = stated.get(who, 0) + len(statement)
    chosen = sorted(said, key=lambda who: -stated[who])
    requests = [
        (EXTRACT_SPEAKER_PROMPT, SPEAKER_LINES_HEADER.format(speaker=f"{name}({qq})") + chunk)
        for name, qq in chosen
        for chunk in transcript_chunks(said[(name, qq)])
    ]
    return requests[:MAX_SPEAKER_REQUESTS]


def transcript_chunks(lines: Sequence[str]) -> list[str]:
    """The transcript cut at line ends into chunks of at most `MAX_TRANSCRIPT_CHARS` (a
    longer line is cut in pieces), oldest first; at most `MAX_CHUNKS`, the newest kept."""
    chunks = chunk_lines(lines, MAX_TRANSCRIPT_CHARS, piece_chars=MAX_TRANSCRIPT_CHARS)
    return [chunk for chunk in chunks if chunk.strip()][-MAX_CHUNKS:]


def parse_facts(text: str) -> list[dict]:
    """The valid facts of the model's JSON answer; anything malformed, or a copy of the
    format's placeholders, is skipped."""
    valid = []
    for fact in _fact_items(text):
        if (
            isinstance(fact, dict)
            and isinstance(fact.get("content"), str)
            and fact["content"].strip()
            and not copies_the_format(fact["content"])
        ):
            tags = fact.get("tags")
            user_id = fact.get("user_id")
            valid.append(
                {
                    "content": fact["content"],
                    "tags": tags if isinstance(tags, list) else None,
                    "user_id": str(user_id)
                    if isinstance(user_id, str | int) and str(user_id)
                    else None,
                }
            )
    return valid


def _fact_items(text: str) -> list[object]:
    """The items of every `facts` list the answer holds, and any fact object standing on its
    own: the real 1.5B model wrote one request's two facts as two answers joined by a
    full-width comma, no JSON as a whole, and both facts were lost. An answer no object of
    which reads whole is mended as any model JSON is."""
    items: list[object] = []
    for found in json_objects(text):
        facts = found.get("facts")
        if isinstance(facts, list):
            items.extend(facts)
        elif "content" in found:
            items.append(found)
    if items:
        return items
    data = parse_json_object(text)
    facts = data.get("facts") if data else None
    return facts if isinstance(facts, list) else []

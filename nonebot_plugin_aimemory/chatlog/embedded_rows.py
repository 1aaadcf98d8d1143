"""What is embedded of a chat-log row (and of a search's query), and the maker its vector is
recorded with: in a group chat its speaker's name and its text, elsewhere its text, cut to
what a model takes."""

from __future__ import annotations

from ..engine import VectorMaker
from ..scopes import Scope
from ..store import ChatRow, Unembedded
from ..text import encodable

# The start of a long message says what it is about, and a model's input has a limit
# (multilingual-e5: 512 tokens); this also bounds the tokens a row can cost.
EMBED_MAX_CHARS = 1000
# What a row's embedded text is made of (embedded_row); recorded with its vector.
ROW_FORM = "speaker: text"


def embedded_text(text: str) -> str:
    """What is embedded of a query (and of a row, after its speaker)."""
    return encodable(text)[:EMBED_MAX_CHARS]


def embedded_row(row: Unembedded) -> str:
    """What is embedded of a row: in a group chat, its text after its speaker's name, as
    the keyword index has it. Who said something is part of what it means to a question
    about a person ("what did Bob say about the trip"): on LoCoMo's group chats, e5 over the
    texts alone ranked the evidence in its top 10 for 28 % of questions, over name and text
    for 50 %. A private chat's lines are one person's (or the bot's), and the bot's lines
    carry no name: there the name would tell nothing."""
    scope = Scope.parse_or_none(row.session_key)
    named = row.role != "assistant" and (scope is None or scope.is_group)
    name = encodable(row.speaker_name or "").strip() if named else ""
    return embedded_text(f"{name}: {row.text}" if name else row.text)


def row_maker(maker: VectorMaker) -> VectorMaker:
    """The maker recorded with rows' vectors: the embedder's, and the form of the text
    (`ROW_FORM`), so vectors of an earlier form are made again in the background."""
    return VectorMaker(maker.model, f"{maker.convention}; rows {ROW_FORM}")


def embeddable(row: ChatRow) -> bool:
    """Whether a row gets a vector: not refused (it is never sent to a model again), not
    empty."""
    return row.id > 0 and not row.refused and bool(row.text.strip())

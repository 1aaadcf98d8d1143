"""Turning a turn's outcome into what QQ users read: split long replies, explain failures."""

from __future__ import annotations

import re

from .. import texts
from ..engine.llm import LLMError

# Prefer to cut at a paragraph, then a line, then a sentence end, then anywhere.
_BREAKS = ("\n\n", "\n", "。", "！", "？", ". ", "! ", "? ", "；", "，", " ")


_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*```[^\n`]*\n?", re.MULTILINE)
# `[text](url)` but not an image `![alt](url)`: the reply builder turns those into pictures.
_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\((https?://[^\s)]+)\)")


def plain_for_qq(text: str) -> str:
    """The model's Markdown as QQ shows it best: bold and heading marks and code fences
    dropped, `[text](url)` written as `text（url）`; images and everything else untouched."""
    text = _FENCE.sub("", text)
    text = _HEADING.sub("", text)
    text = _BOLD.sub(r"\2", text)
    return _LINK.sub(r"\1（\2）", text)


def split_reply(text: str, *, max_chars: int, max_parts: int) -> list[str]:
    """Split `text` into at most `max_parts` messages of at most `max_chars` characters."""
    text = text.strip()
    parts: list[str] = []
    while text:
        if len(parts) == max_parts - 1 and len(text) > max_chars:
            keep = max_chars - len(texts.REPLY_TRUNCATED)
            parts.append(text[:keep].rstrip() + texts.REPLY_TRUNCATED)
            break
        if len(text) <= max_chars:
            parts.append(text)
            break
        cut = _best_cut(text, max_chars)
        parts.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return parts


def _best_cut(text: str, max_chars: int) -> int:
    window = text[:max_chars]
    for mark in _BREAKS:
        position = window.rfind(mark)
        if position >= max_chars // 2:
            return position + len(mark)
    return max_chars


def failure_text(error: LLMError) -> str:
    """A short Chinese apology matching what went wrong (details go to the log)."""
    if error.kind == "timeout":
        return texts.LLM_TIMEOUT
    if error.kind == "context_length":
        return texts.TOO_LONG
    if error.kind == "empty":
        return texts.LLM_EMPTY
    if error.status in (401, 403):
        return texts.LLM_REJECTED_KEY
    if error.status == 402:  # DeepSeek and others: insufficient balance
        return texts.LLM_NO_BALANCE
    return texts.LLM_UNAVAILABLE

"""Messages as a plain transcript, and the one chunker that cuts a transcript into requests
(the compressor folds it chunk by chunk, the fact extractor reads it chunk by chunk)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .messages import Message


def render_transcript(messages: Sequence[Message], *, assistant_label: str) -> list[str]:
    """The messages as plain lines, the assistant's prefixed with `assistant_label`; tool
    calls, tool results, system messages and the model's reasoning are left out."""
    lines: list[str] = []
    for message in messages:
        text = message.text.strip()
        if not text or message.role in ("tool", "system"):
            continue
        lines.append(text if message.role == "user" else f"{assistant_label}{text}")
    return lines


def chunk_lines(
    lines: Sequence[str],
    max_size: int,
    *,
    piece_chars: int,
    size: Callable[[str], int] = len,
    separator_size: int = 1,
) -> list[str]:
    """Group lines, oldest first, into newline-joined chunks of at most `max_size`: a chunk
    costs the `size` of its pieces plus `separator_size` between two of them. A line longer
    than `piece_chars` is cut into pieces first, so one huge message still fits somewhere
    (a single piece over `max_size` gets a chunk of its own)."""
    piece_chars = max(piece_chars, 1)
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for line in lines:
        pieces = [line[i : i + piece_chars] for i in range(0, len(line), piece_chars)] or [""]
        for piece in pieces:
            cost = size(piece)
            if current and used + separator_size + cost > max_size:
                chunks.append("\n".join(current))
                current, used = [], 0
            used += cost + (separator_size if current else 0)
            current.append(piece)
    if current:
        chunks.append("\n".join(current))
    return chunks

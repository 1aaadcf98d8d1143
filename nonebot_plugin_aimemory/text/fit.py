"""Fitting lines into a character budget: the one loop behind every model-facing listing
that has a size cap (chat-log tool results, the reviewer's chat, memory search pages, the
memory block injected before a turn)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Shorten = Callable[[str, int, int], "str | None"]
"""`(line, room_chars, rank) -> kept line or None`: what to keep of a line that does not fit
in the `room_chars` left, `rank` being its place in the order lines are tried (0 = first)."""


@dataclass(frozen=True, slots=True)
class FittedLines:
    """The lines that fit, in input order, and their positions in the input."""

    lines: list[str]
    indices: list[int]

    @property
    def text(self) -> str:
        """The kept lines joined by line breaks."""
        return "\n".join(self.lines)


def fit_lines(
    lines: Sequence[str],
    budget_chars: int,
    *,
    newest: bool = False,
    used_chars: int = 0,
    skip_misfits: bool = False,
    shorten: Shorten | None = None,
) -> FittedLines:
    """The lines whose newline-joined text fits in `budget_chars`, tried first to last (or
    last to first when `newest`), returned in input order.

    `used_chars` counts text the lines will follow (a header and its line break). The first
    line that does not fit ends the listing, or with `skip_misfits` is left out while later
    ones are still tried; `shorten` may keep part of it instead.
    """
    order = range(len(lines) - 1, -1, -1) if newest else range(len(lines))
    kept: dict[int, str] = {}
    used = used_chars
    for rank, index in enumerate(order):
        line = lines[index]
        separator = 1 if kept or used_chars else 0
        room = budget_chars - used - separator
        fits = len(line) <= room
        if not fits:
            shortened = shorten(line, room, rank) if shorten is not None else None
            if shortened is None:
                if skip_misfits:
                    continue
                break
            line = shortened
        kept[index] = line
        used += separator + len(line)
        if not fits and not skip_misfits:
            break
    indices = sorted(kept)
    return FittedLines([kept[i] for i in indices], indices)


def cut_line(line: str, chars: int) -> str:
    """`line` cut to `chars` characters, the last of them an ellipsis."""
    return line[: max(chars - 1, 0)] + "…"


def cut_first(line: str, room_chars: int, rank: int) -> str | None:
    """A `shorten` for listings where one line longer than the whole budget shows its start
    rather than nothing; later lines that do not fit are left out."""
    return cut_line(line, room_chars) if rank == 0 else None

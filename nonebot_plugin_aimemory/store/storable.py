"""The one rule for text at the store boundary, applied to every parameter of every
statement on either backend, so what SQLite stores PostgreSQL stores and returns alike:
PostgreSQL's text refuses NUL, and neither driver can encode a lone surrogate (half an
emoji a decoder let through). Both become U+FFFD, as a decoder would have made them: a
separator to the segmenter, as NUL was, so the full-text terms stay the same."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..text import REPLACEMENT, encodable

NUL = "\x00"


def storable_text(text: str) -> str:
    """`text` as both backends store it."""
    text = encodable(text)
    return text.replace(NUL, REPLACEMENT) if NUL in text else text


def storable_values(values: Iterable[Any]) -> tuple[Any, ...]:
    """A statement's parameters with every text among them made storable."""
    return tuple(storable_text(value) if isinstance(value, str) else value for value in values)


def storable_rows(rows: Iterable[Iterable[Any]]) -> list[tuple[Any, ...]]:
    """`executemany`'s rows of parameters, each made storable."""
    return [storable_values(values) for values in rows]

"""Moments as the stores keep them: fixed-width UTC text, whose text order is time order,
the same on both databases."""

from __future__ import annotations

from datetime import datetime, timezone

UTC_TEXT_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utc_text(moment: datetime) -> str:
    """Fixed-width UTC timestamp: text order is time order."""
    return moment.astimezone(timezone.utc).strftime(UTC_TEXT_FORMAT)


def utc_now_text() -> str:
    """The current UTC time in the stored text format."""
    return utc_text(datetime.now(timezone.utc))


def parse_utc_text(text: str) -> datetime:
    """A stored UTC timestamp back as an aware datetime."""
    return datetime.strptime(text, UTC_TEXT_FORMAT).replace(tzinfo=timezone.utc)

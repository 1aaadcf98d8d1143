"""The time zone the panel's pages show times in: AIMEMORY_TIMEZONE, the zone the usage
chart's days and the commands' times are counted in, whatever the browser's own clock
says. The page is told the zone's IANA name (for the browser's Intl API) and its label."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta, tzinfo


@dataclass(frozen=True, slots=True)
class PageZone:
    """The zone as the browser's Intl API names it, and as the page labels times."""

    name: str
    label: str


def page_zone(zone: tzinfo) -> PageZone:
    """`zone` for the pages: a named zone by its name; a fixed offset (the China time used
    when the configured name is unknown) as `Etc/GMT∓h`, labelled `UTC±hh:mm`."""
    key = getattr(zone, "key", None)
    if isinstance(key, str) and key:
        return PageZone(key, key)
    offset = zone.utcoffset(None) or timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    if not minutes:
        return PageZone("UTC", "UTC")
    sign = "+" if minutes >= 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    label = f"UTC{sign}{hours:02d}:{rest:02d}"
    if rest:
        # No Etc/ name for a part hour; newer browsers take the offset itself.
        return PageZone(f"{sign}{hours:02d}:{rest:02d}", label)
    # The Etc/ names count the other way round: Etc/GMT-8 is eight hours ahead of UTC.
    return PageZone(f"Etc/GMT{'-' if sign == '+' else '+'}{hours}", label)

"""Where a memory came from, as `~记忆 列表`, the panel and the model's tool results show it:
briefly, since every token of a tool result costs, and nothing at all when it is unknown."""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store import Person, Provenance

AUTOMATIC = "自动整理"
BY_PANEL = "管理面板添加"
# The origins that say when someone told it (the reviewer's and the extraction's are later).
_DATED = frozenset({"said", "quoted", "forwarded", "command", "panel"})


def who(person: Person | None) -> str:
    """`小明(20001)`; the name or the QQ number alone when only one is known."""
    if person is None:
        return ""
    if person.name and person.user_id:
        return f"{person.name}({person.user_id})"
    return person.name or person.user_id or ""


def _short(person: Person | None) -> str:
    """Who passed it on, by name alone (their QQ number when they have none)."""
    return "" if person is None else person.name or person.user_id or ""


def provenance_summary(provenance: Provenance) -> str:
    """`小明(20001) 说`, `小红(20002) 的话，小明引用`, `自动整理`…; '' when unknown."""
    said_by = who(provenance.said_by)
    told_by = _short(provenance.told_by)
    origin = provenance.origin
    if origin == "said" and said_by:
        return f"{said_by} 说"
    if origin in ("quoted", "forwarded") and said_by:
        passed = "引用" if origin == "quoted" else "转发"
        return f"{said_by} 的话，{told_by} {passed}" if told_by else f"{said_by} 的话，{passed}"
    if origin in ("review", "extract"):
        return f"{said_by} 说，{AUTOMATIC}" if said_by else AUTOMATIC
    if origin == "command" and said_by:
        return f"{said_by} 用命令记下"
    if origin == "panel":
        return BY_PANEL
    return ""


def provenance_note(provenance: Provenance, said_on: date | None) -> str:
    """`（小明(20001) 说，12-01）` after a memory's line (the day it was told, when someone
    told it); '' when where it came from is unknown."""
    summary = provenance_summary(provenance)
    if not summary:
        return ""
    if said_on is not None and provenance.origin in _DATED:
        summary += f"，{said_on:%m-%d}"
    return f"（{summary}）"


# The marks a memory's line carries beside its content (memory.py's `memory_line`, and
# `provenance_note`): `#u3fa9 [个人] `, ` [标签：a、b]`, ` (关于 20001)`, `（小明(20001) 说，
# 12-07）`. A small model that copies a note into its answer copies them too ("小明(20001)
# 说：我家猫叫豆包。 (关于 20001)（小明(20001) 说，12-07）", issue #36): they are taken out
# of what the member reads, the words kept. It also writes a line of its own in a note's
# shape, its tag before the quote made of the QQ number ("[20002]「阿强(20002)说：…」").
NOTE_MARKS = re.compile(
    r"(?m)^\s*#[0-9a-z]{4,12}\s+(?:\[个人(?:·私密)?\]\s*)?"
    r"|^\s*\[(?:个人(?:·私密)?|\d{5,12})\]\s*(?=「)"
    r"|\s*\[标签：[^\]\n]{0,200}\]"
    r"|\s*[(（]关于 \d{1,20}[)）]"
    r"|\s*（[^（）\n]{0,80}?(?:[(（]\d{1,20}[)）] 说|的话，|用命令记下|"
    + AUTOMATIC
    + "|"
    + BY_PANEL
    + r")[^（）\n]{0,20}）"
)

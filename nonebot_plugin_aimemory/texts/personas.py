"""The `~人设` command: listing, showing and switching personas."""

from __future__ import annotations

from collections.abc import Sequence

PERSONA_USAGE = "用法：~人设 列表 | ~人设 当前 | ~人设 切换 <名字>"
# A persona name is shown at most this long (a 200-character "name" is not echoed whole).
PERSONA_NAME_SHOWN_CHARS = 20


def _shown_persona(name: str) -> str:
    if len(name) <= PERSONA_NAME_SHOWN_CHARS:
        return name
    return name[:PERSONA_NAME_SHOWN_CHARS] + "…"


def persona_list(names: Sequence[str], current: str) -> str:
    """`~人设 列表`: every persona, one a line, the current one marked."""
    lines = [f"・{name}（当前）" if name == current else f"・{name}" for name in names]
    hint = "（切换：~人设 切换 <名字>）" if len(names) > 1 else "（还没有自定义人设）"
    return "可用人设：\n" + "\n".join(lines) + "\n" + hint


def persona_current(name: str) -> str:
    """`~人设 当前`."""
    return f"当前人设：{name}"


def persona_switched(name: str) -> str:
    """After a switch: each persona keeps its own context and memories."""
    return f"已切换到人设「{name}」。之前人设的上下文和记忆都保留着，切回去就能接着聊。"


def persona_unchanged(name: str) -> str:
    """Switching to the persona already played."""
    return f"现在就是人设「{name}」。"


def persona_missing(name: str, current: str) -> str:
    """Switching to a persona that does not exist (or no longer does)."""
    return (
        f"没有名为「{_shown_persona(name)}」的人设，仍然是「{current}」。"
        "发送 ~人设 列表 查看可用的人设。"
    )

"""Whether this process was started as the plugin's own command-line tool rather than by a
bot (which imports the plugin after setting NoneBot up)."""

from __future__ import annotations

import itertools
import sys

MIGRATION_TOOL = "nonebot_plugin_aimemory.migrate"


def started_as_migration_tool() -> bool:
    """`python -m nonebot_plugin_aimemory.migrate …` (the interpreter's own arguments say so)."""
    arguments = getattr(sys, "orig_argv", [])
    return any(
        flag == "-m" and module == MIGRATION_TOOL for flag, module in itertools.pairwise(arguments)
    )

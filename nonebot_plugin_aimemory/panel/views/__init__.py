"""What the panel's JSON API answers, built from the running bot's parts: the overview of
every chat (`overview`), one scope's memories (`memories`, read and changed through
MemoryService, so through the same rules as the tools and commands), its chat log
(`chat_log`), usage (`usage`) and review state (`review`). No web framework here:
routes.py turns these into HTTP."""

from __future__ import annotations

from .errors import PanelError
from .overview import ChatNameSource, NoNames, PanelData

__all__ = ["ChatNameSource", "NoNames", "PanelData", "PanelError"]

"""What other plugins add to the conversation: tool providers, and PreCompact callbacks told
which messages are about to be folded."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from .engine import PreCompactHooks, Tool, ToolRegistry

logger = logging.getLogger("nonebot_plugin_aimemory")

# What a provider is handed: the plugin's `Runtime` (runtime.py), which passes itself in.
R = TypeVar("R")
# (runtime, session key) -> tools bound to that session. Bound once, when the session is built.
ToolProvider = Callable[[R, str], Iterable[Tool]]


class Extensions(Generic[R]):
    """What other plugins add to the conversation: tool providers, and PreCompact callbacks
    told which messages are about to be folded. One registry per plugin, handed to each
    Runtime it starts (`Extensions[Runtime]`)."""

    def __init__(self) -> None:
        self.tool_providers: list[ToolProvider[R]] = []
        self.pre_compact = PreCompactHooks()

    def register_tool_provider(self, provider: ToolProvider[R]) -> ToolProvider[R]:
        """Add tools to every session built from now on (usable as a decorator)."""
        if provider not in self.tool_providers:
            self.tool_providers.append(provider)
        return provider

    def unregister_tool_provider(self, provider: ToolProvider[R]) -> None:
        """Remove a provider added with `register_tool_provider`; unknown ones are ignored."""
        if provider in self.tool_providers:
            self.tool_providers.remove(provider)

    def add_tools(self, tools: ToolRegistry, runtime: R, key: str) -> None:
        """Register every provider's tools for the session `key`; a provider that fails (or
        clashes with a registered tool) has the rest of its tools skipped, logged."""
        for provider in self.tool_providers:
            try:
                for tool in provider(runtime, key):
                    tools.register(tool)
            except Exception:
                # Another plugin's broken provider must not take the conversation down.
                logger.exception(
                    "tool provider %r failed for %s; its tools are skipped", provider, key
                )

"""Which persona each chat plays: the operator's catalog, every chat's choice (kept in the
database, read once at startup), and the key of the current persona's part of a chat. A
chat whose chosen persona file has gone plays `默认` until one is chosen again (the choice
is kept, so restoring the file restores the persona)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal, Protocol

from ..scopes import Scope
from .catalog import DEFAULT_PERSONA, Persona, PersonaCatalog

logger = logging.getLogger("nonebot_plugin_aimemory")


class ChoiceStore(Protocol):
    """Where the choices are kept (store/persona_store.py, or nowhere)."""

    async def load_all(self) -> dict[str, str]:
        """chat key -> persona name."""
        ...

    async def choose(self, chat_key: str, persona: str) -> None:
        """Remember the chat's persona."""
        ...

    async def forget(self, chat_key: str) -> None:
        """The chat plays the default persona again."""
        ...


class UnsavedChoices:
    """No database: choices last until the bot stops."""

    async def load_all(self) -> dict[str, str]:
        """Nothing was kept."""
        return {}

    async def choose(self, chat_key: str, persona: str) -> None:
        """Kept in memory only."""

    async def forget(self, chat_key: str) -> None:
        """Kept in memory only."""


@dataclass(frozen=True, slots=True)
class Switch:
    """What `switch` did: `switched`, `unchanged` (already playing it) or `missing` (no
    such persona as of now), and the persona played afterwards."""

    status: Literal["switched", "unchanged", "missing"]
    current: Persona


class Personas:
    """The catalog and every chat's choice of persona."""

    def __init__(self, catalog: PersonaCatalog, store: ChoiceStore) -> None:
        self.catalog = catalog
        self.store = store
        self._chosen: dict[str, str] = {}
        self._missing_logged: set[tuple[str, str]] = set()

    async def load(self) -> None:
        """Read the persona files and the stored choices (at startup)."""
        await self.catalog.reload()
        self._chosen = await self.store.load_all()

    @property
    def defined(self) -> bool:
        """Whether the operator defined any persona besides `默认`."""
        return len(self.catalog.names()) > 1

    def current(self, chat_key: str) -> Persona:
        """The persona the chat plays now."""
        name = self._chosen.get(chat_key, DEFAULT_PERSONA)
        persona = self.catalog.get(name)
        if persona is not None:
            return persona
        if (chat_key, name) not in self._missing_logged:
            self._missing_logged.add((chat_key, name))
            logger.warning(
                "%s chose persona %r, which no longer exists: playing 默认", chat_key, name
            )
        return self.catalog.default

    def shown_name(self, chat_key: str) -> str | None:
        """The persona's name for a status line, or None while only `默认` exists (a bot
        without personas shows no persona line)."""
        current = self.current(chat_key)
        if current.name == DEFAULT_PERSONA and not self.defined:
            return None
        return current.name

    def window_key(self, chat_key: str) -> str:
        """The key of the current persona's window, memories and review state in the chat."""
        return str(Scope.parse(chat_key).with_persona(self.current(chat_key).name))

    def named(self, name: str) -> Persona:
        """The persona called `name`, or `默认` when it no longer exists."""
        return self.catalog.get(name) or self.catalog.default

    async def switch(self, chat_key: str, name: str) -> Switch:
        """Make the chat play `name` (re-reading the folder first, so a new file counts)."""
        await self.catalog.reload()
        current = self.current(chat_key)
        wanted = self.catalog.get(name)
        if wanted is None:
            return Switch("missing", current)
        if wanted.name == current.name and self._chosen.get(chat_key, DEFAULT_PERSONA) == name:
            return Switch("unchanged", current)
        if wanted.name == DEFAULT_PERSONA:
            await self.store.forget(chat_key)
            self._chosen.pop(chat_key, None)
        else:
            await self.store.choose(chat_key, wanted.name)
            self._chosen[chat_key] = wanted.name
        logger.info("%s now plays persona %r (was %r)", chat_key, wanted.name, current.name)
        return Switch("switched", wanted)

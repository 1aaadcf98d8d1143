"""Which persona each chat plays (survives restarts); a chat without a row plays `默认`."""

from __future__ import annotations

from .backend import Backend


class PersonaStore:
    """SQL for the `persona_choices` table."""

    def __init__(self, database: Backend) -> None:
        self.database = database

    async def load_all(self) -> dict[str, str]:
        """chat key -> persona name, for every chat that chose one."""
        rows = await self.database.read("SELECT chat_key, persona FROM persona_choices")
        return {str(key): str(persona) for key, persona in rows}

    async def choose(self, chat_key: str, persona: str) -> None:
        """Remember the chat's persona."""
        await self.database.write_one(
            "INSERT INTO persona_choices (chat_key, persona) VALUES (?, ?) "
            "ON CONFLICT(chat_key) DO UPDATE SET persona = excluded.persona",
            (chat_key, persona),
        )

    async def forget(self, chat_key: str) -> None:
        """The chat plays the default persona again."""
        await self.database.write_one("DELETE FROM persona_choices WHERE chat_key = ?", (chat_key,))

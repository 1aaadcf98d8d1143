"""Facts about the plugin's own state that outlive a restart (`plugin_state`): each is set
once and then read, so two processes racing to set one agree on the first."""

from __future__ import annotations

from .backend import Backend
from .connection import Connection


class PluginStateStore:
    """SQL for the `plugin_state` table."""

    def __init__(self, database: Backend) -> None:
        self.database = database

    @property
    def for_one_process(self) -> bool:
        """Whether the database is meant for one bot process (a SQLite file is: a second
        bot on it shares and overwrites the first one's memories without meaning to)."""
        return not self.database.shared

    async def get(self, name: str) -> str | None:
        """The value of `name`, or None when it was never set."""
        rows = await self.database.read("SELECT value FROM plugin_state WHERE name = ?", (name,))
        return str(rows[0][0]) if rows else None

    async def set_once(self, name: str, value: str) -> str:
        """Set `name` unless it is set already; the value it holds afterwards."""

        def work(connection: Connection) -> str:
            connection.execute(
                "INSERT INTO plugin_state (name, value) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (name, value),
            )
            (held,) = connection.execute(
                "SELECT value FROM plugin_state WHERE name = ?", (name,)
            ).fetchone()
            return str(held)

        return await self.database.write(work)

    async def put(self, name: str, value: str) -> None:
        """Set `name` to `value`, whatever it held."""
        await self.database.write_one(
            "INSERT INTO plugin_state (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (name, value),
        )

    async def forget(self, name: str) -> None:
        """`name` is set no more."""
        await self.database.write_one("DELETE FROM plugin_state WHERE name = ?", (name,))


class MemoryOnlyPluginState:
    """No database: the facts last until the bot stops."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}

    @property
    def for_one_process(self) -> bool:
        """Nothing is shared with another process."""
        return True

    async def get(self, name: str) -> str | None:
        """The value of `name`, or None."""
        return self._values.get(name)

    async def set_once(self, name: str, value: str) -> str:
        """Set `name` unless it is set already; the value it holds afterwards."""
        return self._values.setdefault(name, value)

    async def put(self, name: str, value: str) -> None:
        """Set `name` to `value`."""
        self._values[name] = value

    async def forget(self, name: str) -> None:
        """`name` is set no more."""
        self._values.pop(name, None)

"""Vision descriptions cached by image hash, so the same sticker is described once."""

from __future__ import annotations

from .backend import Backend
from .connection import Connection
from .times import utc_now_text


class ImageDescriptionStore:
    """SQL for `image_descriptions`: vision-model descriptions cached by the image's full
    SHA-256 hex digest. Rows keyed by the old 8-hex short hash are never read again."""

    def __init__(self, database: Backend) -> None:
        self.database = database

    async def get(self, image_hash: str) -> str | None:
        """The cached description of an image, if any."""
        rows = await self.database.read(
            "SELECT description FROM image_descriptions WHERE hash = ?", (image_hash,)
        )
        return str(rows[0][0]) if rows else None

    async def put(self, image_hash: str, description: str) -> None:
        """Cache (or overwrite) the description of an image."""

        def work(connection: Connection) -> None:
            connection.execute(
                "INSERT INTO image_descriptions (hash, description, created_at) "
                "VALUES (?, ?, ?) ON CONFLICT (hash) DO UPDATE SET "
                "description = excluded.description, created_at = excluded.created_at",
                (image_hash, description, utc_now_text()),
            )

        await self.database.write(work)

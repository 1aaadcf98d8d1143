"""The SQLite file: its connection, schema and migrations, and the chat log's FTS5 index."""

from __future__ import annotations

from .database import Database, open_database

__all__ = ["Database", "open_database"]

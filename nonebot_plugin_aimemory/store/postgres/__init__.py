"""A PostgreSQL server: its connection, schema and migrations, pgvector, and the chat
log's term-array index. Imported only when the configured database is PostgreSQL."""

from __future__ import annotations

from .database import PostgresDatabase, ServerTooOld
from .schema import NewerSchema

__all__ = ["NewerSchema", "PostgresDatabase", "ServerTooOld"]

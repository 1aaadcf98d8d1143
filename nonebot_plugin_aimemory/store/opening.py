"""Opening the database the configuration names: the SQLite file (an unusable file leaves
the bot on in-memory history, as always), or a PostgreSQL server, which is waited for
rather than replaced: a bot that shares its memories with other processes must not go on
with memories of its own."""

from __future__ import annotations

import logging
from pathlib import Path

from ..config_errors import ConfigError
from .addresses import redacted
from .backend import Backend
from .sqlite import Database, open_database

logger = logging.getLogger("nonebot_plugin_aimemory")


class DatabaseUnreachable(RuntimeError):
    """The PostgreSQL server cannot be used now (down, refusing the login, no such
    database): worth trying again later. The message holds no password."""


async def open_backend(path: str, url: str = "") -> Backend | None:
    """The PostgreSQL database at `url` when one is given, else the SQLite file at `path`
    (None when it cannot be opened). Raises DatabaseUnreachable, or ConfigError for a
    server the plugin refuses (older than PostgreSQL 13, a newer schema)."""
    if not url:
        return await open_database(path)
    import psycopg

    from .postgres import NewerSchema, PostgresDatabase, ServerTooOld

    try:
        database = await PostgresDatabase.open(url)
    except (ServerTooOld, NewerSchema) as error:
        raise ConfigError(f"nonebot-plugin-aimemory: aimemory_database_url: {error}") from None
    except (psycopg.Error, OSError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise DatabaseUnreachable(f"cannot use PostgreSQL at {redacted(url)}: {reason}") from None
    logger.info("aimemory: database %s opened", redacted(url))
    return database


async def open_file(path: str | Path) -> Backend:
    """The SQLite file at `path`, created if missing; raises OSError or sqlite3.Error when
    it cannot be opened (the migration tool's source, which must not be replaced)."""
    return await Database.open(path)

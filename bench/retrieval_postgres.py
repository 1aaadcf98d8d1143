"""The retrieval bench's PostgreSQL databases: the product runs once per method, each run in
a database of its own (as each has a SQLite file of its own), created on the server of the
URL it is given and dropped after the run.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

CONNECT_TIMEOUT_SECONDS = 10
# A database just left may still show the plugin's last connections closing, or an
# autovacuum worker (which only a superuser may end): the drop is tried again a while.
DROP_ATTEMPTS, DROP_RETRY_SECONDS = 20, 0.5


def database_url(url: str, database: str) -> str:
    """`url` naming `database` instead of its own."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


@asynccontextmanager
async def scratch_database(url: str, label: str) -> AsyncIterator[str]:
    """A new empty database on `url`'s server (its role needs CREATEDB), named for `label`
    and this process; yields its URL, drops it afterwards."""
    import psycopg
    from psycopg import sql

    name = f"aimemory_bench_{os.getpid()}_{label}"
    async with await psycopg.AsyncConnection.connect(
        url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
    ) as admin:
        await admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield database_url(url, name)
        finally:
            drop = sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name))
            for attempt in range(DROP_ATTEMPTS):
                try:
                    await admin.execute(drop)
                    break
                except psycopg.errors.ObjectInUse:
                    if attempt == DROP_ATTEMPTS - 1:
                        raise
                    await asyncio.sleep(DROP_RETRY_SECONDS)

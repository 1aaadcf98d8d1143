"""Jobs every process runs now and then on the whole database (the chat log's retention,
the purge of deleted memories): of several processes sharing one database, one does a
round at a time and the others skip it, so nothing is deleted or counted twice.

SQLite's BEGIN IMMEDIATE already makes a write the file's only writer (a second process
runs after it and finds nothing left); PostgreSQL's transactions run side by side, so a
job's transaction first tries its advisory lock, held until the transaction ends (a
process that dies mid-round loses it with its connection). Locks here are in the two-key
space, apart from the schema's one-key lock and the memory scopes' class."""

from __future__ import annotations

from enum import IntEnum

from .backend import Backend
from .connection import Connection

JOB_LOCK_CLASS = 0x6A6F62  # "job"


class Job(IntEnum):
    """A job that one process at a time runs over the whole database."""

    CHAT_LOG_RETENTION = 1
    MEMORY_PURGE = 2


def claim_job(database: Backend, connection: Connection, job: Job) -> bool:
    """Whether this transaction may do `job` now: False when another process's transaction
    is doing it (PostgreSQL), True otherwise, the claim then held until this one ends."""
    return database.try_lock(connection, JOB_LOCK_CLASS, int(job))

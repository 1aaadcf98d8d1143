"""The database the stores use, whichever it is: the SQLite file (sqlite/database.py) or a
PostgreSQL server (postgres/database.py). The stores write their SQL once; what the two
databases do differently (a clock, a lock, an operator, the full-text index, vectors ranked
in the database) is asked of the backend here, never by testing which one it is."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from .chat_log_ranking import Postings
from .connection import Connection
from .vector_column import VectorColumn

T = TypeVar("T")


class Backend(Protocol):
    """Each call is done in the order asked for; `write` is one transaction. The methods
    taking a `Connection` are used inside such a transaction."""

    @property
    def path(self) -> str:
        """Where the data is: the file's path, or the server's URL without its password."""
        ...

    @property
    def shared(self) -> bool:
        """Whether other bot processes may write the same data at any time (a server), rather
        than the data being one bot's own (a file: a second bot on it is a mistake)."""
        ...

    async def read(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """Run one query and return all its rows, as tuples."""
        ...

    async def read_all(self, work: Callable[[Connection], T]) -> T:
        """Run the synchronous `work`, which only reads, in one call on the database: its
        statements cost one hand-over to the database's thread, not one each (each sees
        what is committed when it runs, as separate reads would)."""
        ...

    async def write(self, work: Callable[[Connection], T]) -> T:
        """Run `work` in one transaction: committed when it returns, rolled back when it
        raises."""
        ...

    async def write_one(self, sql: str, params: Iterable[Any] = ()) -> None:
        """One statement, atomic on its own."""
        ...

    async def close(self) -> None:
        """Finish what was asked for, then close."""
        ...

    def now_seconds(self, connection: Connection) -> float:
        """Now, in epoch seconds, by the clock every process sharing the data reads."""
        ...

    def lock(self, connection: Connection, space: int, key: int) -> None:
        """Wait for any other transaction holding the lock (`space`, `key`), then hold it
        until this transaction ends."""
        ...

    def try_lock(self, connection: Connection, space: int, key: int) -> bool:
        """Hold the lock (`space`, `key`) until this transaction ends, unless another
        transaction holds it now (False, without waiting)."""
        ...

    @property
    def null_safe_equals(self) -> str:
        """The operator by which NULL equals NULL (`a <op> b`)."""
        ...

    def byte_order(self, column: str) -> str:
        """`column` as compared in the order of its bytes (for ranges of keys)."""
        ...

    def chat_log_postings(self) -> Postings:
        """The chat log's full-text index on this database."""
        ...

    async def vector_column(self) -> VectorColumn | None:
        """The column in which the database ranks the chat-log rows' vectors itself, made
        ready (None where the plugin ranks them). Logged in one line either way."""
        ...

"""pgvector (the `vector` extension) on the plugin's PostgreSQL database: found in any
schema, or created in the plugin's own when the role may, and the chat-log vectors'
`embedding` column added; or why not."""

from __future__ import annotations

from dataclasses import dataclass

from ..connection import Connection
from .schema import SCHEMA_LOCK, SCHEMA_NAME

# pgvector (the `vector` extension) lives outside the numbered migrations: the version
# numbers are the SQLite file's as well, and a column whose type exists only where the
# extension does cannot be part of a version every database reaches. Its column and index
# are added, idempotently, after the schema check, by the first start that ranks chat-log
# rows by vector (chat_log_pgvector.py), and only then: a bot without row vectors
# never creates an extension. A database without them is at the same version.
VECTOR_EXTENSION = "vector"
# pgvector's limit on a `vector`'s dimensions: a longer one is ranked by the plugin.
PGVECTOR_MAX_DIMENSIONS = 16_000
_CREATE_PGVECTOR = "create_pgvector"


@dataclass(frozen=True, slots=True)
class PgVector:
    """pgvector as the stores name it: its type, cosine distance and `vector_dims`
    qualified by the schema the extension lives in (the plugin's own when the plugin
    created it, any other when an administrator did), so nothing depends on the
    search_path and no other schema's objects are looked up."""

    schema: str
    version: str

    @property
    def vector_type(self) -> str:
        """The `vector` type, qualified."""
        return f"{_quoted(self.schema)}.vector"

    @property
    def cosine_distance(self) -> str:
        """The `<=>` operator, qualified: 1 - cosine (NaN for a zero vector)."""
        return f"OPERATOR({_quoted(self.schema)}.<=>)"

    @property
    def dimensions(self) -> str:
        """The `vector_dims` function, qualified."""
        return f"{_quoted(self.schema)}.vector_dims"


@dataclass(frozen=True, slots=True)
class NoPgVector:
    """Why pgvector cannot be used here (the server's own words), for the log."""

    reason: str


def enable_pgvector(connection: Connection) -> PgVector | NoPgVector:
    """In the caller's transaction: pgvector found (in any schema) or created in the
    plugin's, and `chat_log_vectors.embedding` with its index added if missing; or why
    not, when the server has no pgvector or the role may not create it (nothing changed)."""
    connection.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
    installed = _installed_pgvector(connection)
    if installed is None:
        refused = _create_pgvector(connection)
        if refused is not None:
            return refused
        installed = _installed_pgvector(connection)
        assert installed is not None  # (created just now)
    pgvector, usable = installed
    if not usable:
        return NoPgVector(
            f"extension {VECTOR_EXTENSION!r} is in schema {pgvector.schema!r}, "
            "which this role may not use"
        )
    if not _has_embedding_column(connection):
        # Nullable without a default: a change of the catalogue only, whatever the rows.
        # STORAGE MAIN keeps a row's vector in its row: pgvector's default, EXTERNAL, moves
        # it out of line once the row passes 2 kB (384 dimensions do, with the packed bytes
        # beside them), and a ranking then reads it back from the TOAST table, twice a row:
        # 50 000 rows of a session among 100 000 took 590 ms instead of 170 ms.
        connection.execute(
            f"ALTER TABLE {SCHEMA_NAME}.chat_log_vectors "
            f"ADD COLUMN IF NOT EXISTS embedding {pgvector.vector_type}"
        )
        connection.execute(
            f"ALTER TABLE {SCHEMA_NAME}.chat_log_vectors ALTER COLUMN embedding SET STORAGE MAIN"
        )
        # The rows still to fill from their packed bytes: empty once they are.
        connection.execute(
            "CREATE INDEX IF NOT EXISTS chat_log_vectors_without_embedding "
            f"ON {SCHEMA_NAME}.chat_log_vectors (session_key) WHERE embedding IS NULL"
        )
    return pgvector


def _create_pgvector(connection: Connection) -> NoPgVector | None:
    """pgvector created in the plugin's schema, or why not (the transaction goes on)."""
    import psycopg

    connection.execute(f"SAVEPOINT {_CREATE_PGVECTOR}")
    try:
        connection.execute(
            f"CREATE EXTENSION IF NOT EXISTS {VECTOR_EXTENSION} SCHEMA {SCHEMA_NAME}"
        )
    except (
        psycopg.errors.FeatureNotSupported,  # not installed on the server (PostgreSQL 15+)
        psycopg.errors.UndefinedFile,  # not installed (13, 14), or its library missing
        psycopg.errors.InsufficientPrivilege,  # not a trusted extension: superusers only
    ) as error:
        connection.execute(f"ROLLBACK TO SAVEPOINT {_CREATE_PGVECTOR}")
        return NoPgVector(str(error).splitlines()[0])
    connection.execute(f"RELEASE SAVEPOINT {_CREATE_PGVECTOR}")
    return None


def _installed_pgvector(connection: Connection) -> tuple[PgVector, bool] | None:
    """pgvector where the database has it, and whether this role may use its schema."""
    row = connection.execute(
        "SELECT n.nspname, e.extversion, has_schema_privilege(n.oid, 'USAGE') "
        "FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = ?",
        (VECTOR_EXTENSION,),
    ).fetchone()
    if row is None:
        return None
    schema, version, usable = row
    return PgVector(str(schema), str(version)), bool(usable)


def _has_embedding_column(connection: Connection) -> bool:
    # Looked up first: ALTER TABLE would lock the table at every start even with IF NOT
    # EXISTS.
    row = connection.execute(
        "SELECT 1 FROM pg_attribute WHERE attrelid = ?::regclass AND attname = 'embedding' "
        "AND NOT attisdropped",
        (f"{SCHEMA_NAME}.chat_log_vectors",),
    ).fetchone()
    return row is not None


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'

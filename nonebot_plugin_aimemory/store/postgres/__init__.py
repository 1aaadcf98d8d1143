"""A PostgreSQL server: its connection, schema and migrations, pgvector, and the chat
log's term-array index."""

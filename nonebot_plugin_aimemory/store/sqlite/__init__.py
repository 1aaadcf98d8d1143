"""The SQLite file: its connection, schema and migrations, and the chat log's FTS5 index."""

"""SQLite stores: the only place SQL lives. Every statement is parameterised."""

"""Tests of the SQLite stores."""

"""The one-line form of a message that the model reads in chat-log lines and quoted
forwards: its line breaks shown as a mark, so that every line starts with its own time or
speaker."""

from __future__ import annotations

LINE_BREAK_MARK = " ⏎ "

"""Tests of the conversation through NoneBot: who is answered, sessions, auto-clear,
compression as users see it, `~对话` commands, failures."""

"""Tests of the chat engine: messages, tokens, window, LLM client, tools and the turn loop."""

"""Tests of the chat engine: messages, tokens, window, compressor, LLM client, tools and the
turn loop."""

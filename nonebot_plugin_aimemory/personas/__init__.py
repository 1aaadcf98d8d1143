"""Personas: characters the bot plays, each with its own prompt, window and memories."""

"""Personas: characters the bot plays, each with its own prompt, window and memories.
Other packages import what they use from here."""

from __future__ import annotations

from .catalog import PersonaCatalog
from .choices import Personas, UnsavedChoices
from .commands import PersonaCommands

__all__ = ["PersonaCatalog", "PersonaCommands", "Personas", "UnsavedChoices"]

"""One turn as a use case, with no NoneBot: an `Incoming` message in, an `Outcome` to send
out (`incoming`, `turn`). Bursts of one speaker, the ChatBot of each session and the session
cache, the group auto-clear, the `~对话` command, and which account and process answers a
message (`claims`). Other packages import what they use from here."""

from __future__ import annotations

from .autoclear import GroupAutoClear
from .chatbots import ChatBotFactory
from .claims import MessageClaims
from .commands import Commands, DialogCommands
from .group_windows import group_cleared_in_memory
from .incoming import ANONYMOUS_PREFIX, Command, Incoming, Outcome, RichContent, Speaker, parts_text
from .sessions import SessionCache
from .turn import Conversation
from .warmup import text_tools_ready

__all__ = [
    "ANONYMOUS_PREFIX",
    "ChatBotFactory",
    "Command",
    "Commands",
    "Conversation",
    "DialogCommands",
    "GroupAutoClear",
    "Incoming",
    "MessageClaims",
    "Outcome",
    "RichContent",
    "SessionCache",
    "Speaker",
    "group_cleared_in_memory",
    "parts_text",
    "text_tools_ready",
]

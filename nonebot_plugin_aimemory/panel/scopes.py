"""The scope in a panel URL: a group's (`g:<群号>`), a private chat's (`f:<QQ号>`) or a
person's memories (`u:<QQ号>`), each maybe a persona's part (`#<persona>`). Anything else
is refused before any store is asked, and every action of a request is bound to the one
scope its URL names."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..memory.personal import is_personal_scope
from ..personas.catalog import DEFAULT_PERSONA, is_valid_persona_name
from ..personas.keys import PERSONA_SEPARATOR, chat_key_of, persona_of

# QQ numbers and group numbers are at most 10 digits today; 20 leaves room, not abuse.
_CHAT_KEY = re.compile(r"[gfu]:[1-9][0-9]{0,19}")


class BadScope(ValueError):
    """The URL names no scope the panel serves."""


@dataclass(frozen=True, slots=True)
class Scope:
    """A validated scope: `key` is where its memories and review state live, `chat_key`
    the chat its log and usage belong to (a person's memories have neither)."""

    key: str

    @property
    def chat_key(self) -> str:
        return chat_key_of(self.key)

    @property
    def persona(self) -> str:
        return persona_of(self.key)

    @property
    def personal(self) -> bool:
        """Whether this is a person's memories rather than a chat."""
        return is_personal_scope(self.key)


def parse_scope(raw: str) -> Scope:
    """The scope `raw` names, or BadScope."""
    chat, separator, persona = raw.partition(PERSONA_SEPARATOR)
    if not _CHAT_KEY.fullmatch(chat):
        raise BadScope(raw)
    # The default persona keeps the chat's own key: `#默认` names nothing that exists.
    if separator and (persona == DEFAULT_PERSONA or not is_valid_persona_name(persona)):
        raise BadScope(raw)
    return Scope(raw)

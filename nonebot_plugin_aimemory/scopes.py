"""The scope everything is stored under, as a value: a group (`g:<群号>`), a private chat
with a friend (`f:<QQ号>`) or a person's memories (`u:<QQ号>`), each maybe as seen by one
bot account (`@<QQ号>`) and maybe one persona's part (`#<persona>`): `g:123@10001#猫娘`.
The default persona keeps the bare key, and so does the home account (the first one that
ran on the database, `onebot/accounts.py`): an install that had one account keeps every
window and memory where it was. This module is the only one that prints or takes apart
those key strings; the stores receive `str(scope)`."""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field, replace
from enum import Enum

# The persona a chat plays when none is chosen: its scopes carry no `#persona` part.
DEFAULT_PERSONA = "默认"
MAX_PERSONA_NAME_CHARS = 32


def is_valid_persona_name(name: str) -> bool:
    """A name usable as a file name and on one QQ line: short, no path or control
    characters, not hidden."""
    if not name or len(name) > MAX_PERSONA_NAME_CHARS or name != name.strip():
        return False
    # `#` separates a chat key from its persona.
    if name.startswith(".") or any(c in name for c in '/\\:*?"<>|#'):
        return False
    return all(unicodedata.category(c)[0] not in "CZ" or c == " " for c in name)


PERSONA_SEPARATOR = "#"
ACCOUNT_SEPARATOR = "@"
# QQ numbers and group numbers are at most 10 digits today; 20 leaves room, not abuse.
_ID = re.compile(r"[1-9][0-9]{0,19}")
_KEY = re.compile(
    r"(?P<kind>[gfu]):(?P<id>[^#@]*)(?:@(?P<account>[^#]*))?(?:#(?P<persona>.*))?", re.DOTALL
)
# The made-up chats and people of the panel's try page (trychat/) have ids from 2**64 up:
# 20 digits, which the rule above takes, so every store and page treats them as any other
# chat's; but beyond every 64-bit integer, and OneBot v11 (every implementation, QQ itself)
# gives QQ and group numbers as 64-bit integers, so no event can ever name one of them.
TEST_ID_FLOOR = 2**64


class ScopeKind(str, Enum):
    """What a scope is about; the value is the key's prefix letter."""

    GROUP = "g"
    FRIEND = "f"
    PERSON = "u"


@dataclass(frozen=True, slots=True)
class Scope:
    """A group, a private chat or a person, maybe as one bot account sees it (`account`,
    None for the home account) and maybe one persona's part of it."""

    kind: ScopeKind
    id: str
    persona: str | None = None
    account: str | None = None
    # The keys, made once: the panel's overview derives them for every chat it lists.
    _chat_key: str = field(init=False, repr=False, compare=False)
    _key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, ScopeKind):
            raise ValueError(f"not a scope kind: {self.kind!r}")
        if not isinstance(self.id, str) or not _ID.fullmatch(self.id):
            raise ValueError(f"not a QQ or group number: {self.id!r}")
        if self.account is not None and (
            not isinstance(self.account, str) or not _ID.fullmatch(self.account)
        ):
            raise ValueError(f"not a bot account: {self.account!r}")
        # The default persona keeps the chat's own key: `#默认` names nothing that exists.
        if self.persona is not None and (
            self.persona == DEFAULT_PERSONA or not is_valid_persona_name(self.persona)
        ):
            raise ValueError(f"not a persona name for a key: {self.persona!r}")
        chat_key = f"{self.kind.value}:{self.id}"
        if self.account is not None:
            chat_key += f"{ACCOUNT_SEPARATOR}{self.account}"
        key = chat_key if self.persona is None else f"{chat_key}{PERSONA_SEPARATOR}{self.persona}"
        object.__setattr__(self, "_chat_key", chat_key)
        object.__setattr__(self, "_key", key)

    @classmethod
    def group(cls, group_id: int | str, persona: str | None = None) -> Scope:
        """A group chat (`g:<群号>`)."""
        return cls(ScopeKind.GROUP, str(group_id)).with_persona(persona)

    @classmethod
    def friend(cls, user_id: int | str, persona: str | None = None) -> Scope:
        """A private chat with `user_id` (`f:<QQ号>`)."""
        return cls(ScopeKind.FRIEND, str(user_id)).with_persona(persona)

    @classmethod
    def person(cls, user_id: int | str, persona: str | None = None) -> Scope:
        """`user_id`'s personal memories (`u:<QQ号>`)."""
        return cls(ScopeKind.PERSON, str(user_id)).with_persona(persona)

    @classmethod
    def parse(cls, text: str) -> Scope:
        """The scope the key `text` names; ValueError on anything else."""
        if not isinstance(text, str):
            raise ValueError(f"not a scope key: {text!r}")
        return _parsed(text)

    @classmethod
    def parse_or_none(cls, text: str) -> Scope | None:
        """The scope `text` names, or None for a key that is no scope."""
        try:
            return cls.parse(text)
        except ValueError:
            return None

    def __str__(self) -> str:
        return self._key

    @property
    def key(self) -> str:
        """The key this scope is stored under (`str(scope)`)."""
        return str(self)

    @property
    def chat(self) -> Scope:
        """The scope without its persona: the chat as one account has it, which usage,
        quotas and persona choices belong to."""
        return self if self.persona is None else Scope(self.kind, self.id, account=self.account)

    @property
    def chat_key(self) -> str:
        """The key of the scope without its persona."""
        return self._chat_key

    @property
    def shared(self) -> Scope:
        """The scope as every account has it (persona kept): memories shared by the
        accounts live here."""
        return self if self.account is None else replace(self, account=None)

    @property
    def log_chat(self) -> Scope:
        """The chat itself, without account or persona: what its chat log belongs to (one
        log, whichever account heard a message)."""
        if self.account is None and self.persona is None:
            return self
        return Scope(self.kind, self.id)

    @property
    def persona_name(self) -> str:
        """The persona this scope belongs to (the default one when none is named)."""
        return self.persona or DEFAULT_PERSONA

    @property
    def is_group(self) -> bool:
        """Whether this is a group chat (any persona)."""
        return self.kind is ScopeKind.GROUP

    @property
    def is_friend(self) -> bool:
        """Whether this is a private chat (any persona)."""
        return self.kind is ScopeKind.FRIEND

    @property
    def is_personal(self) -> bool:
        """Whether this holds a person's memories rather than a chat's."""
        return self.kind is ScopeKind.PERSON

    @property
    def is_test(self) -> bool:
        """Whether this is one of the try page's made-up chats or people (TEST_ID_FLOOR)."""
        return is_test_id(self.id)

    def with_persona(self, persona: str | None) -> Scope:
        """This scope's part for `persona` (the bare scope for the default persona)."""
        return replace(self, persona=None if persona in (None, DEFAULT_PERSONA) else persona)

    def personal(self, user_id: int | str) -> Scope:
        """Where `user_id`'s personal memories of this scope's persona live."""
        return Scope.person(user_id, self.persona).with_account(self.account)

    def with_account(self, account: str | None) -> Scope:
        """This scope as seen by the bot `account` (None: the home account)."""
        return self if account == self.account else replace(self, account=account)

    def is_private_chat_of(self, user_id: int | str) -> bool:
        """Whether this is `user_id`'s private chat with the bot (any persona)."""
        return self.is_friend and self.id == str(user_id)


def is_test_id(text: str) -> bool:
    """Whether `text` is an id of the try page's made-up chats and people, never QQ's."""
    return len(text) == 20 and text.isdigit() and int(text) >= TEST_ID_FLOOR


def qq_number(sender_id: object) -> str | None:
    """The QQ number `sender_id` is, as every scope takes it, or None for an id that cannot
    be a person: 0, a negative or 21-digit id, a string of anything but digits. A sender
    with none is answered like an anonymous one: no personal memories, no private chat."""
    if isinstance(sender_id, bool) or not isinstance(sender_id, int | str):
        return None
    text = str(sender_id)
    return text if _ID.fullmatch(text) else None


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Scope:
    """`Scope.parse`, remembered: a scope is immutable, and the same keys come back on
    every turn and every overview of the panel (a bad key raises, which is not cached)."""
    found = _KEY.fullmatch(text)
    if found is None:
        raise ValueError(f"not a scope key: {text!r}")
    persona = found["persona"]
    if persona is not None and persona in ("", DEFAULT_PERSONA):
        raise ValueError(f"not a scope key: {text!r}")
    return Scope(ScopeKind(found["kind"]), found["id"], persona, found["account"])

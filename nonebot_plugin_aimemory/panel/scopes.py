"""The scope in a panel URL: a group's (`g:<群号>`), a private chat's (`f:<QQ号>`) or a
person's memories (`u:<QQ号>`), each maybe as one bot account has it (`@<QQ号>`) and maybe
a persona's part (`#<persona>`). Anything else
is refused before any store is asked, and every action of a request is bound to the one
scope its URL names. The grammar is `Scope`'s (scopes.py)."""

from __future__ import annotations

from ..scopes import Scope

__all__ = ["BadScope", "Scope", "parse_scope"]


class BadScope(ValueError):
    """The URL names no scope the panel serves."""


def parse_scope(raw: str) -> Scope:
    """The scope `raw` names, or BadScope."""
    try:
        return Scope.parse(raw)
    except ValueError:
        raise BadScope(raw) from None

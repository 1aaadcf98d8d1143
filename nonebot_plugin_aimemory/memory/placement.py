"""Where a conversation window's memories live: a fact about a group or a person does not
depend on which bot account heard it, so by default the accounts share them (the window's
scope without its account); `aimemory_accounts_share_memory=false` gives each account its
own (the home account's keys are bare either way, so it keeps the memories it had)."""

from __future__ import annotations

from collections.abc import Callable

from ..scopes import Scope


def memory_key_for(*, shared: bool) -> Callable[[str], str]:
    """The key of a window's memories, from the window's key."""
    if not shared:
        return _own
    return _shared


def _own(window_key: str) -> str:
    return window_key


def _shared(window_key: str) -> str:
    return Scope.parse(window_key).shared.key

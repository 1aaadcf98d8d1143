"""Which bot account a row of the panel is about. A window, its usage and persona choice are
an account's (`g:123@10001`; the home account's keys are bare, scopes.py); the chat's name,
chat log and, by default, its memories are the chat's, whichever account heard them. The
pages label rows with the account only once several accounts have been seen: a bot that
only ever ran one looks as it always did."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..scopes import Scope

if TYPE_CHECKING:
    from ...runtime import Runtime


@dataclass(frozen=True, slots=True)
class AccountView:
    """The home account's QQ number (None until one has spoken), whether several accounts
    have been seen, and whether the accounts share memories."""

    home: str | None
    several: bool
    shared_memory: bool

    def window_account(self, scope: Scope) -> str | None:
        """The QQ number of the account whose window and usage `scope` is (the home
        account's for a bare key; None while none is recorded)."""
        return scope.account if scope.account is not None else self.home

    def memory_account(self, memory_scope: Scope) -> str | None:
        """The QQ number of the account whose own memories `memory_scope` holds; None for
        memories the accounts share."""
        if memory_scope.account is not None:
            return memory_scope.account
        return None if self.shared_memory else self.home

    def fields(self, scope: Scope) -> dict[str, object]:
        """What the API adds to a chat's row: its account and how the pages label it."""
        return {
            "account": self.window_account(scope),
            "home_account": scope.account is None,
            "several_accounts": self.several,
        }


def account_view(runtime: Runtime, stored_keys: Iterable[str]) -> AccountView:
    """The accounts as the panel shows them, from the home account, the accounts connected
    now (those the plugin answers as) and every key stored (`stored_keys`)."""
    accounts = runtime.inbound.accounts
    seen = {account for account in accounts.connected() if accounts.serves(account)}
    if accounts.home is not None:
        seen.add(accounts.home)
    several = len(seen) > 1 or any(_has_account(key) for key in stored_keys)
    return AccountView(accounts.home, several, runtime.config.aimemory_accounts_share_memory)


def _has_account(key: str) -> bool:
    scope = Scope.parse_or_none(key)
    return scope is not None and scope.account is not None

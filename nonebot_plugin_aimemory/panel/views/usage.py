"""A chat's token usage per day and per role, as the panel's chart draws it. Usage is
counted per chat as one bot account has it (`g:1@10001`; its personas share it); a
person's memories have none."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...engine import ROLES, TokenCounts, summed
from ..scopes import Scope

if TYPE_CHECKING:
    from ...runtime import Runtime

USAGE_DEFAULT_DAYS = 30
USAGE_MAX_DAYS = 90


def counts_json(counts: TokenCounts) -> dict[str, int]:
    """Token counts as the API shows them."""
    return {
        "prompt_tokens": counts.prompt_tokens,
        "completion_tokens": counts.completion_tokens,
        "cached_tokens": counts.cached_tokens,
        "total_tokens": counts.total_tokens,
        "calls": counts.calls,
    }


async def usage_per_day(runtime: Runtime, scope: Scope, days: int) -> list[dict[str, Any]]:
    """The chat's tokens on each of the last `days` days (today last), by role."""
    days = max(1, min(days, USAGE_MAX_DAYS))
    if scope.is_personal:
        return []
    per_day = await runtime.usage.per_day(scope.chat_key, days)
    return [
        {
            "day": day,
            **counts_json(summed(by_role.values())),
            "by_role": {
                role: counts_json(counts)
                for role, counts in sorted(by_role.items(), key=_role_order)
            },
        }
        for day, by_role in per_day
    ]


def _role_order(pair: tuple[str, TokenCounts]) -> tuple[int, str]:
    role = pair[0]
    return (ROLES.index(role) if role in ROLES else len(ROLES), role)

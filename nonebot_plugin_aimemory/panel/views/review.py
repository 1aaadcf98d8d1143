"""The background reviewer of a chat as the panel shows it: its state, and a review run
now (as `~记忆 立即生成` does). Only a chat's scope has one, and only with the chat log on.
It reviews into the memories a page shows (`memories_of`), so an account's page shows the
review of the memories the accounts share."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ... import texts
from ...chatlog import ReviewScheduler
from ...engine import LLMError
from ..scopes import Scope
from .chat_log import recorded_chat
from .errors import refusal
from .memories import memories_of

if TYPE_CHECKING:
    from ...runtime import Runtime

logger = logging.getLogger("nonebot_plugin_aimemory")


def reviewer(runtime: Runtime, scope: Scope) -> ReviewScheduler | None:
    """The reviewer, when there is one and the scope is a chat's."""
    recorded = recorded_chat(runtime)
    if recorded is None or scope.is_personal or not isinstance(recorded.reviews, ReviewScheduler):
        return None
    return recorded.reviews


async def review_state(runtime: Runtime, scope: Scope) -> dict[str, Any]:
    """The background reviewer's state for this scope."""
    reviews = reviewer(runtime, scope)
    if reviews is None:
        return {"available": False}
    kept = memories_of(runtime, scope).key
    state = await reviews.store.get(kept)
    return {
        "available": True,
        "enabled": reviews.enabled(state),
        "interval_seconds": reviews.interval(state),
        "last_review_at": state.last_review_at,
        "pending": state.pending,
        "failures": state.failures,
        "running": reviews.reviewing(state),
    }


async def review_now(runtime: Runtime, scope: Scope) -> dict[str, Any]:
    """Run the reviewer on this scope now, as `~记忆 立即生成` does."""
    reviews = reviewer(runtime, scope)
    recorded = recorded_chat(runtime)
    if reviews is None or recorded is None:
        raise refusal(409, "unavailable", texts.REVIEW_NO_EXTERNAL_CONTEXT)
    await recorded.flush()
    kept = memories_of(runtime, scope).key
    try:
        outcome = await reviews.run_now(kept)
    except LLMError as exc:
        logger.warning("panel review of %s failed: %s", kept, exc)
        raise refusal(502, "review_failed", texts.REVIEW_FAILED) from None
    return {
        "created": outcome.created if outcome else 0,
        "updated": outcome.updated if outcome else 0,
    }

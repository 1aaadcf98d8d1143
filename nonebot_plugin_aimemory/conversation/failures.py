"""What a failed model call means for the chat: the short apology it is sent and the log
line with what the provider answered."""

from __future__ import annotations

import logging

from .. import texts
from ..engine import LLMError, note_failure

logger = logging.getLogger("nonebot_plugin_aimemory")


def failure_text(error: LLMError) -> str:
    """A short Chinese apology matching what went wrong (details go to the log)."""
    if error.kind == "refused":
        return texts.LLM_REFUSED
    if error.kind == "account":
        return texts.LLM_ACCOUNT_PROBLEM
    if error.kind == "timeout":
        return texts.LLM_TIMEOUT
    if error.kind == "context_length":
        return texts.TOO_LONG
    if error.kind == "empty":
        return texts.LLM_EMPTY
    if not error.transient:  # any other 4xx: the message was dropped, not kept for later
        return texts.LLM_REQUEST_REJECTED
    return texts.LLM_UNAVAILABLE


def log_failure(key: str, model: str, error: LLMError) -> None:
    """One log line with what the provider answered: status, error code and message (and
    the same for a turn someone watches, engine/turn_trace.py)."""
    note_failure(model, error)
    said = f"code={error.code} message={error.provider_message!r}"
    if error.kind == "account":
        logger.error(
            "LLM key or balance problem in %s: the provider refused the request "
            "(model=%s status=%s %s): %s",
            key,
            model,
            error.status,
            said,
            error.detail[:300],
        )
        return
    logger.warning(
        "LLM failed in %s (model=%s kind=%s status=%s %s): %s",
        key,
        model,
        error.kind,
        error.status,
        said,
        error.detail[:300],
    )

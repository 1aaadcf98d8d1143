"""The reviewer's part of `~记忆`: switch it on or off, set its interval, run it now, and
its lines of `~记忆 状态`."""

from __future__ import annotations

import logging
from datetime import tzinfo

from .. import texts
from ..engine import LLMError
from ..store import parse_utc_text
from .scheduler import ReviewScheduler
from .writer import ChatLog

logger = logging.getLogger("nonebot_plugin_aimemory")

MIN_INTERVAL_SECONDS = 60
MAX_INTERVAL_SECONDS = 86_400


class ReviewCommands:
    """开启 / 关闭 / 间隔 <秒> / 立即生成 for the background reviewer of one scope."""

    def __init__(self, reviews: ReviewScheduler, chat_log: ChatLog, zone: tzinfo) -> None:
        self.reviews = reviews
        self.chat_log = chat_log
        self.zone = zone

    async def run(self, scope: str, action: str, argument: str) -> str:
        """Answer one review action; a bad argument gets the usage line."""
        reviews = self.reviews
        if action in ("开启", "关闭") and not argument:
            await reviews.store.set_enabled(scope, action == "开启")
            return texts.review_switched(action == "开启")
        if action == "间隔":
            if (
                not argument.isdigit()
                or not MIN_INTERVAL_SECONDS <= int(argument) <= MAX_INTERVAL_SECONDS
            ):
                return texts.REVIEW_INTERVAL_USAGE
            await reviews.store.set_interval(scope, int(argument))
            return texts.review_interval_set(int(argument))
        if action == "立即生成" and not argument:
            return await self._review_now(scope)
        return texts.MEMORY_USAGE

    async def _review_now(self, scope: str) -> str:
        await self.chat_log.flush()
        try:
            outcome = await self.reviews.run_now(scope)
        except LLMError as exc:
            logger.warning("manual review of %s failed: %s", scope, exc)
            return texts.REVIEW_FAILED
        except Exception:
            logger.exception("manual review of %s failed", scope)
            return texts.REVIEW_FAILED
        return texts.review_result(
            outcome.created if outcome else 0, outcome.updated if outcome else 0
        )

    async def status(self, scope: str) -> str:
        """Switch, interval, last run and pending work of the reviewer of `scope`."""
        reviews = self.reviews
        state = await reviews.store.get(scope)
        last = state.last_review_at
        return texts.review_status(
            enabled=reviews.enabled(state),
            interval_seconds=reviews.interval(state),
            last_review=parse_utc_text(last).astimezone(self.zone).strftime("%Y-%m-%d %H:%M")
            if last
            else None,
            pending=state.pending,
            running=reviews.reviewing(state),
        )


class ReviewsUnavailable:
    """The reviewer's part of `~记忆` when the chat log may not be sent to a model."""

    async def run(self, scope: str, action: str, argument: str) -> str:
        """Every review action says the reviewer is off."""
        return texts.REVIEW_NO_EXTERNAL_CONTEXT

    async def status(self, scope: str) -> str:
        """The one status line of a reviewer that is off."""
        return texts.REVIEW_NO_EXTERNAL_CONTEXT

"""When a conversation may fold again: the compressor never runs on every turn, and a
fold that could not reach its landing point hands over to truncation for a while."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .compressor import FoldAim

logger = logging.getLogger("nonebot_plugin_aimemory")

# After a fold that got under the threshold, the next one is due once the window regrew
# this share of the way back: all of it when the API counts as the tokenizer does, less
# when the API counts more, which would otherwise fold on every turn.
REFOLD_SHARE = 0.5


@dataclass(slots=True)
class FoldCadence:
    """When one conversation may fold again. A fold that landed where it aims is due again
    once the window regrew part of the way back to the threshold (REFOLD_SHARE). One that
    fell short (system prompt and tools leave no room: the request is still above the
    landing point, maybe above the threshold) lets truncation do the work until the
    conversation added the aim's `refold_tokens`, so the compressor never runs on every
    turn."""

    fell_short: bool = False
    """The last fold left the request above the policy's landing point."""
    regrow_tokens: int = 0
    _grown_tokens: int = 0
    _mark_tokens: int = 0

    def grown(self, window_tokens: int) -> int:
        """Window tokens added since the last fold, truncations in between included."""
        if window_tokens < self._mark_tokens:
            # Shrunk without a compaction: the conversation was cleared or reloaded.
            self.reset()
        return self._grown_tokens + window_tokens - self._mark_tokens

    def due(self, window_tokens: int) -> bool:
        """A prompt over the threshold may fold now: none yet, or the window regrew."""
        return self.grown(window_tokens) >= self.regrow_tokens

    def may_fold(self, window_tokens: int) -> bool:
        """A compaction may call the compressor rather than truncate."""
        return not self.fell_short or self.due(window_tokens)

    def after_fold(self, window_tokens: int, request_tokens: int, aim: FoldAim) -> None:
        """Start counting after a fold that left a request of `request_tokens`."""
        self.fell_short = request_tokens > aim.landing_tokens
        room = aim.trigger_tokens - request_tokens
        self.regrow_tokens = aim.refold_tokens if self.fell_short else int(room * REFOLD_SHARE)
        self._grown_tokens = 0
        self._mark_tokens = window_tokens

    def after_fold_of(
        self, key: str, window_tokens: int, request_tokens: int, aim: FoldAim
    ) -> None:
        """`after_fold`, warning when the fold fell short of its landing point, since
        truncation then keeps the window down until it regrew."""
        self.after_fold(window_tokens, request_tokens, aim)
        if self.fell_short:
            logger.warning(
                "%s: ~%d tokens after folding, above the %d a fold aims for (threshold %d; "
                "system prompt and tools take %d): truncating instead of folding until the "
                "window grew by %d tokens",
                key,
                request_tokens,
                aim.landing_tokens,
                aim.trigger_tokens,
                request_tokens - window_tokens,
                self.regrow_tokens,
            )

    def after_truncation(self, before_tokens: int, after_tokens: int) -> None:
        """Keep counting across a truncation: what was added before it still counts."""
        self._grown_tokens = self.grown(before_tokens)
        self._mark_tokens = after_tokens

    def reset(self) -> None:
        """Forget the last fold: the next one is due at once."""
        self.fell_short = False
        self.regrow_tokens = self._grown_tokens = self._mark_tokens = 0

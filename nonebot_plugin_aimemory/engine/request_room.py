"""How much room a request leaves under the token budget: for the verbatim tail beside
the summary, and for the results of the next tool round."""

from __future__ import annotations

from dataclasses import dataclass

from .compressor import CompressionPolicy

# The results of one tool round take at most this share of the budget: with the verbatim
# tail (a fifth) and the summary (a tenth) a round still leaves room for the next one.
TOOL_RESULTS_BUDGET_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class RequestRoom:
    """A request's tokens against the budget: the system prompt and tools (`fixed_tokens`),
    the window, and the turn's own messages (`turn_tokens`)."""

    policy: CompressionPolicy
    fixed_tokens: int
    window_tokens: int
    turn_tokens: int

    @property
    def over_budget(self) -> bool:
        """Whether the request as it stands would go over the budget."""
        request = self.fixed_tokens + self.window_tokens + self.turn_tokens
        return request > self.policy.budget_tokens

    @property
    def tail_tokens(self) -> int:
        """How much verbatim tail still fits beside the summary and this turn's messages."""
        policy = self.policy
        room = policy.budget_tokens - self.fixed_tokens - self.turn_tokens
        room -= policy.summary_max_tokens
        return max(0, min(policy.keep_recent_tokens, room))

    @property
    def results_tokens(self) -> int:
        """Tokens the results of the next round may take, framing included: the round's
        share of the budget, less when the request would go over the budget even with the
        window folded into its summary."""
        policy = self.policy
        window = min(self.window_tokens, policy.summary_max_tokens)
        share = int(policy.budget_tokens * TOOL_RESULTS_BUDGET_SHARE)
        room = policy.budget_tokens - self.fixed_tokens - window - self.turn_tokens
        return max(0, min(share, room))

"""The startup check of what every request carries before the conversation (the system
prompt and the built-in tools) against the context budget."""

from __future__ import annotations

from .config import FIXED_PROMPT_WARN_SHARE, check_prompt_budget
from .conversation.chatbots import ChatBotFactory
from .engine.messages import Message
from .engine.tokens import (
    ESTIMATE_ERROR_MARGIN,
    EstimatingCounter,
    TiktokenCounter,
    message_tokens,
)
from .engine.tools import ToolRegistry
from .scopes import Scope

# A QQ group number as long as they get, for measuring a group's system prompt at startup.
PROBE_GROUP_ID = 9_999_999_999


async def prompt_budget_warning(
    chatbots: ChatBotFactory, counter: TiktokenCounter | EstimatingCounter, budget_tokens: int
) -> str | None:
    """Measure what every request carries before the conversation (the system prompt and
    the built-in tools of a group, the longer of the two chat notes) against the budget,
    with the runtime's counter; raises ConfigError when they do not fit at all. tiktoken,
    not loaded at start-up, is loaded for it only when the estimate, even with a generous
    error, could reach the warning."""
    key = str(Scope.group(PROBE_GROUP_ID))
    specs_json = ToolRegistry(chatbots.builtin_tools(key)).specs_json()
    specs = specs_json.decode() if specs_json else ""
    system = chatbots.system_prompt_for(key)
    if not counter.loaded:
        estimate = EstimatingCounter()
        estimated = message_tokens(Message("system", system), estimate) + estimate.count(specs)
        if estimated * ESTIMATE_ERROR_MARGIN < FIXED_PROMPT_WARN_SHARE * budget_tokens:
            return None
        await counter.ready()
    return check_prompt_budget(
        message_tokens(Message("system", system), counter),
        counter.count(specs),
        budget_tokens,
    )

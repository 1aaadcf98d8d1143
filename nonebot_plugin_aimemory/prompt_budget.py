"""The startup check of what every request carries before the conversation (the system
prompt and the built-in tools) against the context budget."""

from __future__ import annotations

from .config_errors import ConfigError
from .conversation import ChatBotFactory
from .engine import (
    ESTIMATE_ERROR_MARGIN,
    EstimatingCounter,
    Message,
    TiktokenCounter,
    ToolRegistry,
    message_tokens,
)
from .scopes import Scope

# What every request carries before the conversation (the system prompt and the tool
# definitions) should leave most of the budget to the conversation.
FIXED_PROMPT_WARN_SHARE = 0.4


def check_prompt_budget(system_tokens: int, tools_tokens: int, budget_tokens: int) -> str | None:
    """The startup check of the budget against the system prompt and tool definitions sent
    with every request: a warning when they take over 40 % of it, a ConfigError naming
    `aimemory_max_context_tokens` when they do not fit at all."""
    fixed_tokens = system_tokens + tools_tokens
    figures = (
        f"the system prompt ({system_tokens} tokens) and tool definitions ({tools_tokens} "
        f"tokens) sent with every request"
    )
    if fixed_tokens > budget_tokens:
        raise ConfigError(
            "nonebot-plugin-aimemory: invalid configuration: aimemory_max_context_tokens: "
            f"a budget of {budget_tokens} tokens is smaller than {figures}; allowed: at "
            f"least {fixed_tokens} (without the warning: over "
            f"{int(fixed_tokens / FIXED_PROMPT_WARN_SHARE)}), or shorten aimemory_system_prompt"
        )
    if fixed_tokens > FIXED_PROMPT_WARN_SHARE * budget_tokens:
        return (
            f"aimemory: {figures} take {fixed_tokens / budget_tokens:.0%} of the budget of "
            f"{budget_tokens} tokens (aimemory_max_context_tokens), leaving "
            f"{budget_tokens - fixed_tokens} for the conversation"
        )
    return None


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

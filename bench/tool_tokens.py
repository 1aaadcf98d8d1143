"""Prompt tokens every request carries before the conversation: tools and system prompt.

Counted in cl100k on exactly what is sent (the six built-in tools, the default persona's
prompts); no model is called, so --quick changes nothing.
Target: tool definitions <= 700 tokens (cl100k).
"""

from __future__ import annotations

import json

from bench import harness as h

TARGET_TOOL_TOKENS = 700
MIN_BUDGET_TOKENS = 1024  # the smallest aimemory_max_context_tokens accepted
MESSAGE_OVERHEAD_TOKENS = 4  # the plugin's framing per message (engine/tokens.py)
GROUP_ID, PRIVATE_KEY = 9_876_543_210, "f:1234567890"


async def run(bench: h.Bench) -> None:
    """Count the tool definitions and the system prompts, then print the verdict."""
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter

    count = TiktokenCounter().count  # exact, whichever counter the runtime budgets with
    async with h.plugin(bench, db="tool_tokens.db") as (_, runtime):
        group_key = h.group_key(GROUP_ID)
        tools = (runtime.build_chatbot(group_key).tools.specs_json() or b"").decode()
        tools_tokens = count(tools)
        print(f"tool definitions (cl100k)                 {tools_tokens:5d} tokens")
        for spec in json.loads(tools):
            encoded = json.dumps(spec, ensure_ascii=False, separators=(",", ":"))
            print(f"  {spec['function']['name']:<40} {count(encoded):5d} tokens")
        group = count(runtime.system_prompt_for(group_key))
        private = count(runtime.system_prompt_for(PRIVATE_KEY))
    print(f"system prompt, group (default persona)    {group:5d} tokens")
    print(f"system prompt, private chat               {private:5d} tokens")
    fixed = tools_tokens + group + MESSAGE_OVERHEAD_TOKENS
    print(
        f"fixed part of a group request             {fixed:5d} tokens "
        f"({fixed / MIN_BUDGET_TOKENS:.0%} of a {MIN_BUDGET_TOKENS}-token budget)"
    )
    label = f"tool definitions {tools_tokens} <= {TARGET_TOOL_TOKENS} tokens"
    h.verdict(label, tools_tokens <= TARGET_TOOL_TOKENS)


if __name__ == "__main__":
    h.main(__doc__, run)

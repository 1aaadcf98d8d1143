"""Prompt tokens every request carries before the conversation: the tool definitions and
the system prompt.

The plugin's runtime on a temporary database (so the six built-in tools exist: memory_save,
memory_search, memory_update, memory_forget, read_recent_chat, search_current_chat), with
the default persona. Counted with the plugin's bundled offline cl100k counter on exactly
what is sent: the `tools` request field as the registry encodes it, and the system prompt of
a group and of a private chat (the memory rules are stated there once, not in the tool
descriptions). Printed: the tool definitions' total and per tool, the system prompts, and
what the fixed part leaves of the smallest allowed budget (1024 tokens).
No model is called; the figures do not depend on the machine, so --quick changes nothing.

Target: tool definitions <= 700 tokens (cl100k).
Run: python -m bench.tool_tokens [--quick]
"""

from __future__ import annotations

import json

from bench.harness import (
    Bench,
    count_tokens,
    fake_llm,
    group_key,
    main,
    plugin_runtime,
    system_prompt,
    tool_definitions,
    verdict,
)

TARGET_TOOL_TOKENS = 700
MIN_BUDGET_TOKENS = 1024  # the smallest aimemory_max_context_tokens accepted
MESSAGE_OVERHEAD_TOKENS = 4  # the plugin's framing per message (engine/tokens.py)
GROUP_ID = 9_876_543_210
PRIVATE_KEY = "f:1234567890"


async def run(bench: Bench) -> None:
    with fake_llm() as llm:
        async with plugin_runtime(llm, bench.work_dir / "tool_tokens.db") as runtime:
            tools = tool_definitions(runtime, group_key(GROUP_ID)).decode()
            tools_tokens = count_tokens(runtime, tools)
            print(f"tool definitions (cl100k)                 {tools_tokens:5d} tokens")
            for spec in json.loads(tools):
                encoded = json.dumps(spec, ensure_ascii=False, separators=(",", ":"))
                name = spec["function"]["name"]
                print(f"  {name:<40} {count_tokens(runtime, encoded):5d} tokens")
            group = count_tokens(runtime, system_prompt(runtime, group_key(GROUP_ID)))
            private = count_tokens(runtime, system_prompt(runtime, PRIVATE_KEY))
            print(f"system prompt, group (default persona)    {group:5d} tokens")
            print(f"system prompt, private chat               {private:5d} tokens")
            fixed = tools_tokens + group + MESSAGE_OVERHEAD_TOKENS
            share = fixed / MIN_BUDGET_TOKENS
            print(
                f"fixed part of a group request             {fixed:5d} tokens "
                f"({share:.0%} of a {MIN_BUDGET_TOKENS}-token budget)"
            )
    verdict(
        f"tool definitions {tools_tokens} <= {TARGET_TOOL_TOKENS} tokens",
        tools_tokens <= TARGET_TOOL_TOKENS,
    )


if __name__ == "__main__":
    main(__doc__, run)

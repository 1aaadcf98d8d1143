"""cl100k tokens of the tool definitions every request carries (no model is called)."""

from __future__ import annotations

from bench import harness as h

TARGET_TOOL_TOKENS = 700
GROUP_ID = 9_876_543_210


async def run(bench: h.Bench) -> None:
    """Count the tool definitions, then print the verdict."""
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter

    async with h.plugin(bench, db="tool_tokens.db") as (_, runtime):
        tools = runtime.build_chatbot(h.group_key(GROUP_ID)).tools.specs_json() or b""
    tools_tokens = TiktokenCounter().count(tools.decode())  # exact, whatever the runtime uses
    label = f"tool definitions {tools_tokens} <= {TARGET_TOOL_TOKENS} tokens (cl100k)"
    h.verdict(label, tools_tokens <= TARGET_TOOL_TOKENS)


if __name__ == "__main__":
    h.main(__doc__, run)

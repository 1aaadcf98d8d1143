"""Reading the blocks of quoted data the model is shown (issue #38): the memories injected
before a member's message, `memory_search` results and chat-log results. Each reader checks
that the block opens on the first line and is closed, and returns the lines inside it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Block:
    """The lines between a block's opening and closing lines, and the lines after it."""

    inside: list[str]
    after: list[str]


def framed_block(text: str, opening: str, closing: str) -> Block:
    """`text` read as a block: its first line is `opening`, a later line is `closing`."""
    lines = text.splitlines()
    assert lines, "empty text, no block"
    assert lines[0] == opening, f"the block does not open with {opening!r}:\n{text}"
    assert closing in lines[1:], f"the block is not closed with {closing!r}:\n{text}"
    end = lines.index(closing, 1)
    return Block(lines[1:end], lines[end + 1 :])


def memory_page(result: str) -> Block:
    """A `memory_search` result: the hit lines inside the block, the paging note after."""
    from nonebot_plugin_aimemory import prompts

    return framed_block(result, prompts.MEMORY_RESULTS_OPENING, prompts.MEMORY_RESULTS_CLOSING)


def memory_hits(result: str) -> list[str]:
    """The hit lines of a `memory_search` result that has no paging note."""
    page = memory_page(result)
    assert page.after == [], f"unexpected lines after the block:\n{result}"
    return page.inside


def chat_rows(result: str) -> list[str]:
    """The chat-log lines of a `read_recent_chat` / `search_current_chat` result."""
    from nonebot_plugin_aimemory import prompts

    block = framed_block(result, prompts.CHAT_LOG_OPENING, prompts.CHAT_LOG_CLOSING)
    assert block.after == [], f"unexpected lines after the block:\n{result}"
    return block.inside


def injected_block(content: str, *, personal: bool = False) -> Block:
    """A user message with memories put before it: the memory lines inside the block, the
    member's message after it. `personal`: the block holds the speaker's personal memories,
    so its header says what the [个人] mark means."""
    from nonebot_plugin_aimemory import prompts

    header = prompts.MEMORY_INJECTION_HEADER
    if personal:
        header += prompts.MEMORY_INJECTION_PERSONAL_NOTE
    return framed_block(content, header, prompts.MEMORY_INJECTION_FOOTER)

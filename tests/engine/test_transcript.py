"""The transcript the compressor and the fact extractor read, and the one chunker that
cuts it into requests."""

from __future__ import annotations


def test_transcript_labels_the_assistant_and_leaves_tools_and_system_out() -> None:
    from nonebot_plugin_aimemory.engine.messages import Message, ToolCall
    from nonebot_plugin_aimemory.engine.transcript import render_transcript

    messages = [
        Message("system", "规则"),
        Message("user", "[10:00] 小明(1)：你好"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "memory_search", "{}"),)),
        Message("tool", "没有找到", tool_call_id="c1"),
        Message("assistant", " 你好呀 "),
    ]

    lines = render_transcript(messages, assistant_label="助手：")

    assert lines == ["[10:00] 小明(1)：你好", "助手：你好呀"]


def test_chunks_hold_whole_lines_oldest_first_within_the_size() -> None:
    from nonebot_plugin_aimemory.engine.transcript import chunk_lines

    chunks = chunk_lines(["aaaa", "bbbb", "cccc"], 9, piece_chars=100)

    assert chunks == ["aaaa\nbbbb", "cccc"]


def test_a_line_longer_than_a_piece_is_cut_across_chunks() -> None:
    from nonebot_plugin_aimemory.engine.transcript import chunk_lines

    chunks = chunk_lines(["x" * 25], 10, piece_chars=10)

    assert chunks == ["x" * 10, "x" * 10, "x" * 5]


def test_size_and_separator_size_set_the_unit_of_the_budget() -> None:
    from nonebot_plugin_aimemory.engine.transcript import chunk_lines

    # a token-like size: every piece costs 1 plus 1 for its line break, no separator
    chunks = chunk_lines(
        ["a", "b", "c", "d", "e"], 4, piece_chars=10, size=lambda p: 2, separator_size=0
    )

    assert chunks == ["a\nb", "c\nd", "e"]

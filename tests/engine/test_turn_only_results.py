"""What a window keeps of a turn whose tool results stay in their turn (ToolText.kept)."""

from __future__ import annotations


def test_kept_results_replace_theirs_and_later_reasoning_is_blanked() -> None:
    from nonebot_plugin_aimemory.engine.messages import ToolCall, assistant, tool_result
    from nonebot_plugin_aimemory.engine.turn_outcome import TurnProgress
    from nonebot_plugin_aimemory.engine.window import REASONING_PLACEHOLDER

    first, second = ToolCall("a", "memory_search", "{}"), ToolCall("b", "memory_search", "{}")
    progress = TurnProgress()
    progress.add_round(
        assistant("先查一下", (first,), reasoning="想想"), [tool_result(first, "群的记忆")], [None]
    )
    progress.add_round(
        assistant("再查", (second,), reasoning="Bob 爱草莓蛋糕"),
        [tool_result(second, "Bob 爱草莓蛋糕")],
        [tool_result(second, "（已隐去）")],
    )
    progress.pending.append(assistant("你爱蛋糕", reasoning="他爱草莓蛋糕"))

    kept = progress.kept_pending()

    assert [m.text for m in kept] == ["先查一下", "群的记忆", "再查", "（已隐去）", "你爱蛋糕"]
    assert [m.reasoning for m in kept] == [
        "想想",
        None,
        "Bob 爱草莓蛋糕",
        None,
        REASONING_PLACEHOLDER,
    ]
    assert progress.pending[3].text == "Bob 爱草莓蛋糕"  # the turn's own requests keep it
    assert kept[3].tool_call_id == "b"


def test_interim_text_after_a_kept_result_is_blanked() -> None:
    from nonebot_plugin_aimemory.engine.messages import ToolCall, assistant, tool_result
    from nonebot_plugin_aimemory.engine.turn_outcome import TurnProgress

    first, second = ToolCall("a", "memory_search", "{}"), ToolCall("b", "chat_search", "{}")
    progress = TurnProgress()
    progress.add_round(
        assistant("", (first,)), [tool_result(first, "Bob 爱草莓蛋糕")], [tool_result(first, "…")]
    )
    progress.add_round(
        assistant("他爱草莓蛋糕，再查群聊", (second,)), [tool_result(second, "无")], [None]
    )

    kept = progress.kept_pending()

    assert kept[2].text == ""
    assert kept[2].tool_calls == (second,)

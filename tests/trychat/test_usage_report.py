"""`~对话 用量` of a SUPERUSER counts every chat, the try page's test chats marked as tests."""

from __future__ import annotations

XIAOMING = "90000000000000000011"


def test_the_usage_of_all_chats_marks_the_test_chats() -> None:
    from nonebot_plugin_aimemory import texts
    from nonebot_plugin_aimemory.engine.usage import TokenCounts

    report = texts.usage_report_all_chats(
        today="今天",
        week="近 7 天",
        top_chats=[
            (f"f:{XIAOMING}", TokenCounts(prompt_tokens=90, completion_tokens=10)),
            ("g:111", TokenCounts(prompt_tokens=9, completion_tokens=1)),
        ],
    )

    assert f"- f:{XIAOMING}（试聊测试）：100 tokens" in report
    assert "- g:111：10 tokens" in report

"""Chat names for the web panel: a read never waits for the OneBot API; an unknown chat
starts one background refresh of the group and friend lists, whose names later reads see."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.bots import RecordingBot


class ListingBot(RecordingBot):
    """Answers the group and friend lists."""

    async def call_api(self, api: str, **data: Any) -> Any:
        await super().call_api(api, **data)
        if api == "get_group_list":
            return [{"group_id": 111, "group_name": "爬山小队"}]
        if api == "get_friend_list":
            return [{"user_id": 3001, "nickname": "小红", "remark": ""}]
        return None


async def test_an_unknown_chat_answers_none_at_once_and_is_named_after_the_refresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import nonebot

    from nonebot_plugin_aimemory.onebot.names import ChatNames

    bot = ListingBot()
    monkeypatch.setattr(nonebot, "get_bots", lambda: {"42": bot})
    names = ChatNames()

    first = names.name("g:111")
    await names._refreshing  # type: ignore[misc]  # the one background refresh
    again = names.name("g:111"), names.name("f:3001"), names.name("g:999")

    assert first is None
    assert again == ("爬山小队", "小红", None)
    assert [c.api for c in bot.calls] == ["get_group_list", "get_friend_list"]
    await names.close()

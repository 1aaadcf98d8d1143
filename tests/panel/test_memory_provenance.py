"""The panel shows where each memory came from, and a memory it adds is the panel's: said by
nobody the chat knows."""

from __future__ import annotations

from nonebot.adapters.onebot.v11 import MessageSegment

from tests.fakes.events import group_message
from tests.fakes.qq import QQBot, content
from tests.memory.helpers import model_calls_one, saved_id
from tests.panel.test_api import GROUP, api


async def test_a_memory_added_in_the_panel_is_the_panels(panel_client) -> None:
    saved = await panel_client.post(api(GROUP, "/memories"), json={"content": "群主喜欢爬山"})

    (listed,) = (await panel_client.get(api(GROUP, "/memories"))).json()
    expected = {
        "origin": "panel",
        "said_by": None,
        "told_by": None,
        "chat": None,
        "text": "管理面板添加",
    }
    assert saved.json()["provenance"] == listed["provenance"] == expected
    assert listed["source"] == "command"  # as before, for whoever reads `source`


async def test_the_panel_shows_who_said_a_memory_saved_in_a_turn(plugin, panel_client) -> None:
    qq = QQBot()
    qq.store_message(77, user_id=2002, card="小红", said="我对花生过敏")
    event = group_message(content(MessageSegment.reply(77), "记一下"), to_me=True)
    result = await model_calls_one(plugin, qq, event, "memory_save", {"content": "小红对花生过敏"})

    (listed,) = (await panel_client.get(api(GROUP, "/memories"))).json()
    assert listed["id"] == saved_id(result)
    assert listed["provenance"] == {
        "origin": "quoted",
        "said_by": {"user_id": "2002", "name": "小红"},
        "told_by": {"user_id": "2001", "name": "小明"},
        "chat": GROUP,
        "text": "小红(2002) 的话，小明 引用",
    }

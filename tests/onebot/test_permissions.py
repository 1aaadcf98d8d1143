"""Who the plugin takes for a superuser is who NoneBot's SUPERUSER permission takes: both
ways SUPERUSERS may name a person (`10000`, `onebot:10000`) count, another adapter's
prefix does not. Seen through what superusers may do: be answered in a private chat
switched off for everyone else."""

from __future__ import annotations

import nonebot
import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import private_message
from tests.fakes.openai_server import text

USER_ID = 10000


@pytest.mark.parametrize(
    ("superusers", "answered"),
    [
        ({"10000"}, True),
        ({"onebot:10000"}, True),
        ({"qq:10000"}, False),
        ({"onebot:10001", "10002"}, False),
        (set(), False),
    ],
    ids=["bare number", "adapter prefix", "other adapter", "others", "none"],
)
async def test_a_superuser_named_either_way_is_answered_where_only_superusers_are(
    plugin, monkeypatch: pytest.MonkeyPatch, superusers: set[str], answered: bool
) -> None:
    await plugin.restart(aimemory_private_chat=False)
    monkeypatch.setattr(nonebot.get_driver().config, "superusers", superusers)
    plugin.llm.script(text("主人好"))
    bot = RecordingBot()

    await bot.receive(private_message("你好", user_id=USER_ID))

    assert bot.sent_texts == (["主人好"] if answered else [])


async def test_is_superuser_is_nonebots_superuser_permission(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nonebot.permission import SUPERUSER

    from nonebot_plugin_aimemory.onebot.permissions import is_superuser

    monkeypatch.setattr(nonebot.get_driver().config, "superusers", {"onebot:10000"})
    bot = RecordingBot()
    for user_id in (10000, 10001):
        event = private_message("hi", user_id=user_id)
        assert await is_superuser(bot, event) is await SUPERUSER(bot, event)
    assert await is_superuser(bot, private_message("hi", user_id=10000))

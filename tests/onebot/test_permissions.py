"""The superuser test the plugin runs on every addressed message answers as NoneBot's own
SUPERUSER permission does, for both ways SUPERUSERS may name a person."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from nonebot.permission import SuperUser

from tests.fakes.events import group_message, private_message


class OneBotAdapter:
    @staticmethod
    def get_name() -> str:
        return "OneBot V11"


@pytest.mark.parametrize(
    "superusers",
    [set(), {"10000"}, {"onebot:10000"}, {"qq:10000"}, {"onebot:10001", "10002"}],
    ids=["none", "bare number", "adapter prefix", "other adapter", "others"],
)
@pytest.mark.parametrize("user_id", [10000, 10001, 10002, 3001])
async def test_is_superuser_answers_as_nonebots_superuser_permission(
    superusers: set[str], user_id: int
) -> None:
    from nonebot_plugin_aimemory.onebot.permissions import is_superuser

    bot: object = SimpleNamespace(
        adapter=OneBotAdapter(), config=SimpleNamespace(superusers=superusers)
    )
    for event in (group_message("hi", user_id=user_id), private_message("hi", user_id=user_id)):
        expected = await SuperUser()(bot, event)  # type: ignore[arg-type]
        assert await is_superuser(bot, event) == expected  # type: ignore[arg-type]
    # Not vacuous: the cases include superusers.
    if user_id == 10000 and superusers in ({"10000"}, {"onebot:10000"}):
        assert await is_superuser(bot, group_message("hi", user_id=user_id))  # type: ignore[arg-type]

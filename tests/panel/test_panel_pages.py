"""Which pages the panel opens, over HTTP: a chat page opens exactly for the chats the
overview lists (something of it is stored: a window, memories, a chat log, usage, a persona
choice), any other chat is a 404 page saying so, a person's page always opens; a person is
named by their private chat's nickname; the pages name the zone their times are shown in."""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from datetime import timedelta, timezone

import pytest

from tests.panel.conftest import BASE, build_panel_app

Setup = Callable[..., Awaitable[None]]


async def memories_only(plugin) -> None:
    await plugin.runtime.memory.service.save("g:500", "群里每周五聚餐")


async def a_deleted_memory_only(plugin) -> None:
    outcome = await plugin.runtime.memory.service.save("g:500", "群里每周五聚餐")
    await plugin.runtime.memory.service.forget("g:500", outcome.memory.id, by_person=True)


async def chat_log_only(plugin) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text

    plugin.runtime.chat_log.add(ChatRow("g:500", utc_now_text(), "user", "只记进了聊天记录"))
    await plugin.runtime.chat_log.flush()


async def usage_only(plugin) -> None:
    from nonebot_plugin_aimemory.engine.usage import TokenCounts, UsageRow
    from nonebot_plugin_aimemory.store.usage_store import UsageStore

    row = UsageRow("2024-01-01", "g:500", "main", TokenCounts(10, 5, 0, 1))
    await UsageStore(plugin.runtime.database).add([row])


async def persona_choice_only(plugin) -> None:
    from nonebot_plugin_aimemory.store.persona_store import PersonaStore

    await PersonaStore(plugin.runtime.database).choose("g:500", "猫娘")


async def nothing(plugin) -> None:
    return None


@pytest.mark.parametrize(
    ("setup", "scope", "known"),
    [
        (memories_only, "g:500", True),
        (a_deleted_memory_only, "g:500", True),
        (chat_log_only, "g:500", True),
        (usage_only, "g:500", True),
        # The persona file is not there: the chat plays 默认, whose key is the bare one.
        (persona_choice_only, "g:500", True),
        (nothing, "g:500", False),
        # A persona's part the chat never had anything under.
        (memories_only, "g:500#猫娘", False),
        (chat_log_only, "g:500#猫娘", False),
        (memories_only, "f:500", False),
    ],
    ids=[
        "memories",
        "deleted-memory",
        "chat-log",
        "usage",
        "persona-choice",
        "nothing",
        "unused-persona-with-memories",
        "unused-persona-with-chat-log",
        "same-number-other-kind",
    ],
)
async def test_a_chat_page_opens_exactly_when_the_overview_lists_the_chat(
    plugin, panel_client, setup: Setup, scope: str, known: bool
) -> None:
    await setup(plugin)
    url = scope.replace("#", "%23")

    listed = {c["scope"] for c in (await panel_client.get(f"{BASE}/api/chats")).json()}
    page = await panel_client.get(f"{BASE}/chats/{url}")
    row = await panel_client.get(f"{BASE}/api/chats/{url}")

    assert (scope in listed) is known
    assert page.status_code == (200 if known else 404)
    assert row.status_code == (200 if known else 404)


async def test_an_unknown_chat_is_a_404_page_saying_it_was_not_found(panel_client) -> None:
    page = await panel_client.get(f"{BASE}/chats/g:404404")
    row = await panel_client.get(f"{BASE}/api/chats/g:404404")

    assert page.status_code == 404
    assert "text/html" in page.headers["content-type"]
    assert "找不到会话 g:404404" in page.text
    assert f'href="{BASE}/"' in page.text  # the way back to the overview
    assert row.status_code == 404
    assert row.json()["error"] == "not_found"
    assert "g:404404" in row.json()["reason"]


async def test_an_invalid_scope_is_a_400_page_with_the_reason(panel_client) -> None:
    from nonebot_plugin_aimemory import texts

    page = await panel_client.get(f"{BASE}/chats/x:1")

    assert page.status_code == 400
    assert html.escape(texts.PANEL_BAD_SCOPE) in page.text


async def test_a_persons_page_opens_with_no_memories_and_says_it_is_empty(panel_client) -> None:
    page = await panel_client.get(f"{BASE}/chats/u:3001")
    row = await panel_client.get(f"{BASE}/api/chats/u:3001")

    assert page.status_code == 200
    assert "这个人还没有个人记忆" in page.text
    assert row.status_code == 200
    assert (row.json()["personal"], row.json()["memories"]) == (True, 0)


class FriendNames:
    def name(self, chat_key: str) -> str | None:
        return {"f:3001": "小红", "g:111": "爬山小队"}.get(chat_key)


async def test_a_persons_row_is_named_by_their_private_chats_nickname(plugin) -> None:
    panel = build_panel_app(plugin, FriendNames())
    await plugin.runtime.memory.service.save("u:3001", "我对花粉过敏", user_id="3001")
    await plugin.runtime.memory.service.save("g:111#猫娘", "猫娘喜欢鱼干")
    bearer = {"Authorization": "Bearer panel-token-0123456789"}

    async with panel.client(headers=bearer) as client:
        person = (await client.get(f"{BASE}/api/chats/u:3001")).json()
        people = (await client.get(f"{BASE}/api/people")).json()
        persona = (await client.get(f"{BASE}/api/chats/g:111%23猫娘")).json()

    assert person["name"] == "小红"
    assert [p["name"] for p in people] == ["小红"]
    assert persona["name"] == "爬山小队"  # a persona's part is named by its chat
    await panel.data.close()


async def test_the_pages_name_the_configured_zone_for_their_times(plugin, panel_client) -> None:
    await plugin.restart(aimemory_timezone="America/New_York")

    overview = await panel_client.get(f"{BASE}/")
    person = await panel_client.get(f"{BASE}/chats/u:3001")

    for page in (overview, person):
        assert (
            '<meta name="panel-zone" content="America/New_York" data-label="America/New_York">'
            in page.text
        )


def test_a_fixed_offset_zone_is_named_for_the_browser_and_labelled_by_its_offset() -> None:
    from zoneinfo import ZoneInfo

    from nonebot_plugin_aimemory.panel.views.time_zone import PageZone, page_zone

    china = timezone(timedelta(hours=8), "CST")

    assert page_zone(ZoneInfo("Asia/Shanghai")) == PageZone("Asia/Shanghai", "Asia/Shanghai")
    assert page_zone(china) == PageZone("Etc/GMT-8", "UTC+08:00")
    assert page_zone(timezone(timedelta(hours=-3))) == PageZone("Etc/GMT+3", "UTC-03:00")
    assert page_zone(timezone(timedelta(hours=5, minutes=30))) == PageZone("+05:30", "UTC+05:30")
    assert page_zone(timezone.utc) == PageZone("UTC", "UTC")

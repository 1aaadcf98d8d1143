"""The panel with several bot accounts on one bot: a chat two accounts talk in is a row per
account (its window, usage, persona), each labelled with the account's QQ number; the name,
the last chat-log line and the memories are the chat's. An account's page shows its window
and usage, the chat's log and the memories the accounts share, and changes those; with one
account only, no row carries a label. Driven through the real conversation (account 42
claims the home account first, so its keys stay bare; account 43's carry `@43`) over the
real SQLite stores."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.openai_server import text
from tests.memory.helpers import model_calls_one, saved_id
from tests.panel.accounts import (
    GROUP,
    GROUP_NAME,
    HOME,
    SECOND,
    SECONDS_WINDOW,
    GroupNames,
    heard_by,
    talk,
)
from tests.panel.conftest import BASE, PanelApp, build_panel_app, log_in


def api(scope: str, tail: str = "") -> str:
    return f"{BASE}/api/chats/{scope.replace('#', '%23')}{tail}"


async def both_talk(plugin) -> None:
    """Account 42 (the home account) answers once in the group, account 43 twice."""
    await talk(plugin, HOME, "大家好", "你好")
    await talk(plugin, SECOND, "二号在吗", "在的", user_id=2002)
    await talk(plugin, SECOND, "明天爬山吗", "好呀", user_id=2002)


def row_of(rows: list[dict[str, Any]], scope: str) -> dict[str, Any]:
    (row,) = [row for row in rows if row["scope"] == scope]
    return row


@pytest.fixture
async def named(plugin) -> AsyncIterator[PanelApp]:
    built = build_panel_app(plugin, GroupNames())
    yield built
    await built.data.close()


@contextlib.asynccontextmanager
async def logged_in(panel: PanelApp) -> AsyncIterator[httpx.AsyncClient]:
    """A client logged in through the form, as the pages are (writes carry the CSRF token)."""
    async with panel.client() as client:
        client.headers["X-CSRF-Token"] = await log_in(client)
        yield client


@pytest.fixture
async def client(named: PanelApp) -> AsyncIterator[httpx.AsyncClient]:
    async with logged_in(named) as client:
        yield client


async def chats(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get(f"{BASE}/api/chats")
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_chat_two_accounts_talk_in_is_a_row_per_account_labelled_with_its_number(
    plugin, client
) -> None:
    await both_talk(plugin)
    today = plugin.runtime.usage.today_totals()

    rows = await chats(client)

    home, second = row_of(rows, GROUP), row_of(rows, SECONDS_WINDOW)
    assert (home["account"], home["home_account"]) == (HOME, True)
    assert (second["account"], second["home_account"]) == (SECOND, False)
    assert home["several_accounts"] is second["several_accounts"] is True
    assert (home["messages"], second["messages"]) == (2, 4)
    assert home["tokens_today"] == today[GROUP]
    assert second["tokens_today"] == today[SECONDS_WINDOW]
    assert second["tokens_today"] > home["tokens_today"]
    assert home["name"] == second["name"] == GROUP_NAME
    assert home["log_chat"] == second["log_chat"] == GROUP


async def test_the_rows_of_one_chat_take_its_last_log_line_and_stand_together_home_first(
    plugin, client
) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text

    await both_talk(plugin)
    await talk(plugin, HOME, "二群有人吗", "有", group_id=222)
    # A later line of group 111, heard by whichever account: the chat's last activity.
    said_at = utc_now_text()
    plugin.runtime.chat_log.add(ChatRow(GROUP, said_at, "user", "晚点见"))
    await plugin.runtime.chat_log.flush()

    rows = await chats(client)

    assert [row["scope"] for row in rows] == [GROUP, SECONDS_WINDOW, "g:222"]
    assert row_of(rows, GROUP)["last_active"] == said_at
    assert row_of(rows, SECONDS_WINDOW)["last_active"] == said_at


async def test_with_one_account_only_no_row_is_labelled(plugin, client) -> None:
    await talk(plugin, HOME, "大家好", "你好")

    (row,) = await chats(client)
    page = (await client.get(api(GROUP))).json()

    assert row["several_accounts"] is False
    assert (row["account"], row["home_account"]) == (HOME, True)
    assert page["several_accounts"] is False


async def test_two_connected_accounts_label_the_rows_before_the_second_one_spoke(
    plugin, client, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nonebot

    bots = {account: RecordingBot(account) for account in (HOME, SECOND)}
    monkeypatch.setattr(nonebot, "get_bots", lambda: bots)
    await talk(plugin, HOME, "大家好", "你好")

    (row,) = await chats(client)

    assert (row["scope"], row["account"], row["several_accounts"]) == (GROUP, HOME, True)


async def test_an_accounts_page_shows_its_window_and_usage_and_the_chats_memories_and_log(
    plugin, client
) -> None:
    await talk(plugin, HOME, "大家好", "你好")
    memory_id = saved_id(
        await model_calls_one(
            plugin,
            RecordingBot(SECOND),
            heard_by(SECOND, "记住群主喜欢爬山", user_id=2002),
            "memory_save",
            {"content": "群主喜欢爬山"},
        )
    )

    page = await client.get(f"{BASE}/chats/{SECONDS_WINDOW}")
    summary = (await client.get(api(SECONDS_WINDOW))).json()
    memories = (await client.get(api(SECONDS_WINDOW, "/memories"))).json()
    log = (await client.get(api(SECONDS_WINDOW, "/chatlog"))).json()
    usage = (await client.get(api(SECONDS_WINDOW, "/usage?days=1"))).json()
    home_usage = (await client.get(api(GROUP, "/usage?days=1"))).json()

    assert page.status_code == 200
    assert (summary["account"], summary["home_account"], summary["name"]) == (
        SECOND,
        False,
        GROUP_NAME,
    )
    assert summary["messages"] == 4  # 43's window: the question, the tool call and result, 好的
    assert summary["tokens_today"] == plugin.runtime.usage.today_totals()[SECONDS_WINDOW]
    assert (summary["memory_scope"], summary["memory_shared"], summary["memories"]) == (
        GROUP,
        True,
        1,
    )
    assert summary["memory_account"] is None
    assert [m["id"] for m in memories] == [memory_id]
    assert {(r["role"], r["speaker_id"]) for r in log if r["role"] == "assistant"} == {
        ("assistant", HOME),
        ("assistant", SECOND),
    }
    assert [r["text"] for r in log if r["role"] == "user"] == ["大家好", "记住群主喜欢爬山"]
    assert usage[-1]["total_tokens"] == summary["tokens_today"]
    assert usage[-1]["calls"] == 2
    assert home_usage[-1]["calls"] == 1


async def test_edits_deletes_and_restores_on_an_accounts_page_change_the_shared_memory(
    plugin, client
) -> None:
    service = plugin.runtime.memory.service
    await talk(plugin, HOME, "大家好", "你好")
    await talk(plugin, SECOND, "二号在吗", "在的", user_id=2002)
    memory_id = (await service.save(GROUP, "群主喜欢爬山")).memory.id
    memory = api(SECONDS_WINDOW, f"/memories/{memory_id}")

    edited = await client.patch(memory, json={"content": "群主喜欢徒步"})
    after_edit = await service.get(GROUP, memory_id)
    deleted = await client.delete(memory)
    after_delete = await service.get(GROUP, memory_id)
    stones = (await client.get(api(SECONDS_WINDOW, "/tombstones"))).json()
    restored = await client.post(f"{memory}/restore")
    added = await client.post(api(SECONDS_WINDOW, "/memories"), json={"content": "周六集合"})

    assert edited.status_code == 200
    assert after_edit is not None
    assert after_edit.content == "群主喜欢徒步"
    assert deleted.status_code == 200
    assert after_delete is None
    assert [(s["id"], s["restorable"]) for s in stones] == [(memory_id, True)]
    assert restored.status_code == 200
    assert added.status_code == 201
    assert {m.content for m in await service.list(GROUP)} == {"群主喜欢徒步", "周六集合"}
    assert await service.list(SECONDS_WINDOW) == []


async def test_a_review_from_an_accounts_page_saves_into_the_shared_memories(
    plugin, client
) -> None:
    await talk(plugin, HOME, "大家好", "你好")
    await talk(plugin, SECOND, "我下周去杭州", "一路顺风", user_id=2002)
    plugin.llm.script(text('{"ops": [{"op": "create", "content": "2002 下周去杭州"}]}'))

    ran = await client.post(api(SECONDS_WINDOW, "/review"))

    assert ran.status_code == 200, ran.text
    assert ran.json()["created"] == 1
    service = plugin.runtime.memory.service
    assert [m.content for m in await service.list(GROUP)] == ["2002 下周去杭州"]
    assert await service.list(SECONDS_WINDOW) == []


async def test_without_shared_memory_each_accounts_page_shows_its_own_memories(
    plugin, named: PanelApp
) -> None:
    await plugin.restart(aimemory_accounts_share_memory=False)
    await talk(plugin, HOME, "大家好", "你好")
    await talk(plugin, SECOND, "二号在吗", "在的", user_id=2002)

    async with logged_in(named) as client:
        saved = await client.post(api(SECONDS_WINDOW, "/memories"), json={"content": "二号的事"})
        second = (await client.get(api(SECONDS_WINDOW))).json()
        home = (await client.get(api(GROUP))).json()
        home_memories = (await client.get(api(GROUP, "/memories"))).json()

    assert saved.status_code == 201
    assert [m.content for m in await plugin.runtime.memory.service.list(SECONDS_WINDOW)] == [
        "二号的事"
    ]
    assert (second["memory_scope"], second["memory_account"], second["memories"]) == (
        SECONDS_WINDOW,
        SECOND,
        1,
    )
    assert second["memory_shared"] is False
    assert (home["memory_scope"], home["memory_account"], home["memories"]) == (GROUP, HOME, 0)
    assert home_memories == []


async def test_a_chat_only_another_account_talks_in_has_no_row_of_the_home_account(
    plugin, client
) -> None:
    await talk(plugin, HOME, "大家好", "你好")
    await talk(plugin, SECOND, "二群有人吗", "有", group_id=222, user_id=2002)
    await plugin.runtime.memory.service.save("g:222", "二群周六爬山")

    rows = [row for row in await chats(client) if row["log_chat"] == "g:222"]
    summary = (await client.get(api("g:222@43"))).json()

    assert [(row["scope"], row["account"]) for row in rows] == [("g:222@43", SECOND)]
    assert rows[0]["last_active"]
    assert summary["memories"] == 1


async def test_an_account_known_by_its_usage_alone_is_listed_and_its_page_opens(
    plugin, client
) -> None:
    from nonebot_plugin_aimemory.engine.usage import TokenCounts, UsageRow
    from nonebot_plugin_aimemory.store.usage_store import UsageStore

    await talk(plugin, HOME, "大家好", "你好")
    row = UsageRow("2024-01-01", "g:500@43", "main", TokenCounts(10, 5, 0, 1))
    await UsageStore(plugin.runtime.database).add([row])

    listed = row_of(await chats(client), "g:500@43")
    page = await client.get(f"{BASE}/chats/g:500@43")
    another = await client.get(f"{BASE}/chats/g:500@44")

    assert (listed["account"], listed["several_accounts"]) == (SECOND, True)
    assert page.status_code == 200
    assert another.status_code == 404


async def test_people_rows_say_the_accounts_share_a_persons_memories(plugin, client) -> None:
    await talk(plugin, HOME, "大家好", "你好")
    await talk(plugin, SECOND, "二号在吗", "在的", user_id=2002)
    await plugin.runtime.memory.service.save("u:3001", "我对花粉过敏", user_id="3001")

    (person,) = (await client.get(f"{BASE}/api/people")).json()
    page = (await client.get(api("u:3001"))).json()

    assert (person["scope"], person["account"], person["several_accounts"]) == (
        "u:3001",
        None,
        True,
    )
    assert (page["account"], page["memory_shared"], page["memories"]) == (None, True, 1)

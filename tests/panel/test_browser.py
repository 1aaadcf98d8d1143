"""The panel in a real headless Chromium, driven over the DevTools protocol: log in with
the token (Enter submits), find the group that talked to the bot in the overview, open it,
see the memory the model saved with `memory_save`, edit it and delete it; `~记忆 列表` in
QQ then no longer shows it, `~记忆 恢复` brings it back and the page shows it again; the
usage chart is drawn. Screenshots of both pages are saved (AIMEMORY_SCREENSHOTS_DIR, or a
folder in the system temp directory), never committed.

And the polish, in one browser session: chats titled with the name the bots report (looked
up in the background after the first read) and the key beside it; the header's count
following every delete, restore and edit; an unknown chat's 404 page; each empty list
saying what will appear there; times in AIMEMORY_TIMEZONE with its name, in a browser
whose own clock runs in UTC.

Skipped only when no Chromium binary is installed (Debian: `apt-get install chromium`)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import command, model_calls_one, saved_id
from tests.panel.browser import Page, chromium_binary, chromium_page, serving
from tests.panel.conftest import BASE, PANEL_TOKEN, build_panel_app

CHROMIUM = chromium_binary()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium binary on PATH (Debian: apt-get install -y chromium; or set CHROMIUM)",
    ),
]

GROUP_ID = 111
GROUP_NAME = "爬山小队"
SAVED = "小明喜欢爬山"
EDITED = "小明喜欢周末去徒步"
# The bar colour of prompt tokens in chat.js's chart.
PROMPT_BAR_RGB = (0x5B, 0x8D, 0xEF)


class KnownNames:
    """The group's name as the OneBot lookup would give it."""

    def name(self, chat_key: str) -> str | None:
        return GROUP_NAME if chat_key == f"g:{GROUP_ID}" else None


def screenshots_dir() -> Path:
    folder = Path(
        os.environ.get("AIMEMORY_SCREENSHOTS_DIR")
        or Path(tempfile.gettempdir()) / "aimemory-panel-screenshots"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def in_group(text: str, **kwargs: object):
    return group_message(text, group_id=GROUP_ID, to_me=True, **kwargs)  # type: ignore[arg-type]


def memory_text(memory_id: str) -> str:
    return (
        f"(() => {{ const el = document.querySelector('li.memory[data-id=\"{memory_id}\"] .content');"
        " return el ? el.textContent : null; })()"
    )


async def test_log_in_edit_delete_and_restore_a_memory_in_a_real_browser(plugin) -> None:
    assert CHROMIUM is not None
    bot = RecordingBot()
    memory_id = saved_id(
        await model_calls_one(
            plugin, bot, in_group("记住我喜欢爬山"), "memory_save", {"content": SAVED}
        )
    )
    panel = build_panel_app(plugin, KnownNames())
    shots = screenshots_dir()

    async with serving(panel.app) as root, chromium_page(CHROMIUM) as page:
        # Log in: type the token, press Enter.
        await page.goto(f"{root}{BASE}/")
        await page.type_into('input[name="token"]', PANEL_TOKEN)
        await page.press_enter()
        chat = f'li.chat[data-scope="g:{GROUP_ID}"]'
        listed = await page.wait_for(
            f"(() => {{ const el = document.querySelector({json.dumps(chat)});"
            " return el ? el.innerText : null; })()"
        )
        assert GROUP_NAME in listed
        assert f"g:{GROUP_ID}" in listed
        await page.screenshot(shots / "overview.png")

        # Open the group: the memory the model saved is there.
        await page.click(f"{chat} a")
        await page.wait_for("document.body.dataset.loaded === '1'")
        assert await page.wait_for(memory_text(memory_id)) == SAVED
        # It says who said it.
        said_by = f"li.memory[data-id={json.dumps(memory_id)}] .provenance"
        shown = await page.evaluate(f"document.querySelector({json.dumps(said_by)}).textContent")
        assert shown == "小明(2001) 说"

        # Edit it.
        await page.click(f'li.memory[data-id="{memory_id}"] button.edit')
        await page.type_into(f'li.memory[data-id="{memory_id}"] textarea', EDITED)
        await page.click(f'li.memory[data-id="{memory_id}"] button.save')
        await page.wait_for(f"{memory_text(memory_id)} === {json.dumps(EDITED)}")
        stored = await plugin.runtime.memory.service.get(f"g:{GROUP_ID}", memory_id)
        assert stored is not None
        assert stored.content == EDITED

        # Delete it: gone from the list, shown among the deleted ones.
        await page.click(f'li.memory[data-id="{memory_id}"] button.delete')
        await page.wait_for(f"{memory_text(memory_id)} === null")
        await page.wait_for(f"!!document.querySelector('li.tombstone[data-id=\"{memory_id}\"]')")

        # QQ agrees, and restores it.
        listing = await command(bot, group_message("~记忆 列表", group_id=GROUP_ID))
        assert EDITED not in listing
        restored = await command(
            bot, group_message(f"~记忆 恢复 {memory_id}", group_id=GROUP_ID, role="admin")
        )
        assert memory_id in restored

        # The page shows it again.
        await page.goto(f"{root}{BASE}/chats/g:{GROUP_ID}")
        await page.wait_for("document.body.dataset.loaded === '1'")
        assert await page.wait_for(memory_text(memory_id)) == EDITED

        # The usage chart drew the day's bars.
        assert await page.evaluate("document.getElementById('usage-chart').dataset.days") == "30"
        bar_pixels = await page.evaluate(
            f"""(() => {{
                const c = document.getElementById('usage-chart');
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                let n = 0;
                for (let i = 0; i < d.length; i += 4)
                    if (d[i] === {PROMPT_BAR_RGB[0]} && d[i + 1] === {PROMPT_BAR_RGB[1]}
                        && d[i + 2] === {PROMPT_BAR_RGB[2]}) n++;
                return n;
            }})()"""
        )
        assert bar_pixels > 20
        await page.screenshot(shots / "chat.png")

        # Looking a QQ number up on the overview opens that person's page.
        await page.goto(f"{root}{BASE}/")
        await page.wait_for("!!document.getElementById('person-qq')")
        await page.type_into("#person-qq", "3001")
        await page.click("#person-form button")
        await page.wait_for(
            "location.pathname.endsWith('/chats/u%3A3001') && document.body.dataset.loaded === '1'"
        )

    await panel.data.close()
    assert (shots / "overview.png").stat().st_size > 1000
    assert (shots / "chat.png").stat().st_size > 1000


PANEL_ZONE = "Asia/Shanghai"
FRIEND_ID = 3001
FRIEND_NAME = "小红"


class ListingBot(RecordingBot):
    """A connected bot whose group and friend lists name the group and the friend."""

    async def call_api(self, api: str, **data: Any) -> Any:
        answer = await super().call_api(api, **data)
        if api == "get_group_list":
            return [{"group_id": GROUP_ID, "group_name": GROUP_NAME}]
        if api == "get_friend_list":
            return [{"user_id": FRIEND_ID, "nickname": FRIEND_NAME, "remark": ""}]
        return answer


async def log_in(page: Page, root: str) -> None:
    await page.goto(f"{root}{BASE}/")
    await page.type_into('input[name="token"]', PANEL_TOKEN)
    await page.press_enter()
    await page.wait_for("document.body.dataset.loaded === '1'")


def text_of(selector: str) -> str:
    return (
        f"(() => {{ const el = document.querySelector({json.dumps(selector)});"
        " return el ? el.textContent : null; })()"
    )


def empty_note(list_name: str, case: str) -> str:
    """The note of an empty list, if shown."""
    selector = f'.empty[data-list="{list_name}"][data-case="{case}"]'
    return (
        f"(() => {{ const el = document.querySelector({json.dumps(selector)});"
        " return el && !el.hidden ? el.textContent : null; })()"
    )


def shown_in_zone(utc_text: str) -> str:
    from zoneinfo import ZoneInfo

    from nonebot_plugin_aimemory.store.times import parse_utc_text

    return parse_utc_text(utc_text).astimezone(ZoneInfo(PANEL_ZONE)).strftime("%Y-%m-%d %H:%M")


async def test_names_counts_not_found_empty_lists_and_times_in_a_real_browser(
    plugin, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nonebot

    from nonebot_plugin_aimemory.onebot.names import ChatNames

    assert CHROMIUM is not None
    await plugin.restart(aimemory_timezone=PANEL_ZONE)
    bot = ListingBot()
    monkeypatch.setattr(nonebot, "get_bots", lambda: {bot.self_id: bot})
    names = ChatNames()
    panel = build_panel_app(plugin, names)
    service = plugin.runtime.memory.service
    group = f"g:{GROUP_ID}"
    shots = screenshots_dir()

    async with serving(panel.app) as root, chromium_page(CHROMIUM, time_zone="UTC") as page:
        assert await page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone") == "UTC"

        # Nothing yet: both lists of the overview say what will appear there.
        await log_in(page, root)
        assert "还没有会话" in await page.wait_for(empty_note("chats", "none"))
        assert "个人记忆" in await page.wait_for(empty_note("people", "none"))
        await page.screenshot(shots / "overview-empty.png")

        # The model saves a memory in the group; the overview names the group once the
        # bots' lists have been read in the background.
        memory_id = saved_id(
            await model_calls_one(
                plugin, bot, in_group("记住我喜欢爬山"), "memory_save", {"content": SAVED}
            )
        )
        await page.goto(f"{root}{BASE}/")
        chat = f'li.chat[data-scope="{group}"]'
        await page.wait_for(f"({text_of(chat)} || '').includes({json.dumps(GROUP_NAME)})")
        assert group in await page.evaluate(text_of(chat))
        assert await page.evaluate(empty_note("chats", "none")) is None
        assert PANEL_ZONE in await page.evaluate(text_of("h2 .zone-note"))

        # The chat's page: titled by the name, the key beside it.
        await page.click(f"{chat} a")
        await page.wait_for(
            "location.pathname.includes('/chats/') && document.body.dataset.loaded === '1'"
        )
        assert await page.evaluate(text_of("#title-name")) == GROUP_NAME
        assert await page.evaluate(text_of("#title-key")) == group
        assert await page.evaluate("document.title") == f"AI 记忆面板 · {GROUP_NAME}（{group}）"

        # Times in AIMEMORY_TIMEZONE, labelled, though the browser's clock says UTC.
        record = await service.get(group, memory_id)
        assert record is not None
        memory_time = f'li.memory[data-id="{memory_id}"] time'
        assert await page.evaluate(text_of(memory_time)) == shown_in_zone(record.updated_at)
        assert PANEL_ZONE in await page.evaluate(text_of("#memories-card h2 .zone-note"))
        assert f"（{PANEL_ZONE}）" in await page.evaluate(text_of("#last-active"))
        assert "没有删除过的记忆" in await page.evaluate(empty_note("tombstones", "none"))
        await page.screenshot(shots / "chat-named.png")

        # Delete: the header's count, the list's and the deleted list follow.
        await page.click(f'li.memory[data-id="{memory_id}"] button.delete')
        await page.wait_for(f"({text_of('#memory-total')} || '').startsWith('记忆 0 /')")
        assert await page.evaluate(text_of("#memory-count")) == "（0）"
        assert await page.evaluate(text_of("#tombstone-count")) == "（1）"
        assert "还没有记忆" in await page.evaluate(empty_note("memories", "chat"))
        assert await page.evaluate(empty_note("tombstones", "none")) is None

        # Restore: back to one.
        await page.click(f'li.tombstone[data-id="{memory_id}"] button.restore')
        await page.wait_for(f"({text_of('#memory-total')} || '').startsWith('记忆 1 /')")
        assert await page.evaluate(text_of("#tombstone-count")) == "（0）"

        # A memory saved in QQ meanwhile: the next edit on the page brings the count along.
        await service.save(group, "小明养了一只猫")
        await page.click(f'li.memory[data-id="{memory_id}"] button.edit')
        await page.type_into(f'li.memory[data-id="{memory_id}"] textarea', EDITED)
        await page.click(f'li.memory[data-id="{memory_id}"] button.save')
        await page.wait_for(f"({text_of('#memory-total')} || '').startsWith('记忆 2 /')")
        assert await page.evaluate(text_of("#memory-count")) == "（2）"

        # A chat known only by its memories: its chat log and usage say what they will show;
        # no name is known, so the key is the title.
        await service.save("g:222", "二群周六去爬山")
        await page.goto(f"{root}{BASE}/chats/g:222")
        await page.wait_for("document.body.dataset.loaded === '1'")
        assert await page.evaluate(text_of("#title-name")) == "g:222"
        assert await page.evaluate(text_of("#title-key")) == ""
        assert "还没有聊天记录" in await page.evaluate(empty_note("chatlog", "none"))
        assert "近 30 天没有用量" in await page.evaluate(empty_note("usage", "none"))
        await page.screenshot(shots / "chat-empty.png")

        # A chat the panel holds nothing of: a 404 page saying so.
        assert await page.goto_status(f"{root}{BASE}/chats/g:999") == 404
        assert "找不到会话 g:999" in await page.evaluate("document.body.innerText")
        await page.screenshot(shots / "not-found.png")

        # A person without memories: the page opens, named by the friend's nickname, and
        # says it is empty.
        await page.goto(f"{root}{BASE}/chats/u:{FRIEND_ID}")
        await page.wait_for("document.body.dataset.loaded === '1'")
        await page.wait_for(f"{text_of('#title-name')} === {json.dumps(FRIEND_NAME)}")
        assert await page.evaluate(text_of("#title-key")) == f"u:{FRIEND_ID}"
        assert "还没有个人记忆" in await page.evaluate(empty_note("memories", "personal"))

    await names.close()
    await panel.data.close()

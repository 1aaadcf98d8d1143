"""Two bot accounts in one group, in a real headless Chromium: while only the home account
has spoken the overview labels nothing; once the second one answered too, the group is a
row per account, each labelled with its QQ number (the home one as the first account) and
named by the group; the second account's page says whose window and usage it shows, that
the memories and the chat log are every account's, names which account said each of the
bot's lines, and deleting the memory there deletes the one the accounts share.

Skipped only when no Chromium binary is installed (Debian: `apt-get install chromium`)."""

from __future__ import annotations

import json

import pytest

from tests.fakes.bots import RecordingBot
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
from tests.panel.browser import chromium_binary, chromium_page, serving
from tests.panel.conftest import BASE, build_panel_app
from tests.panel.test_browser import log_in, screenshots_dir, text_of

CHROMIUM = chromium_binary()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium binary on PATH (Debian: apt-get install -y chromium; or set CHROMIUM)",
    ),
]


def row(scope: str) -> str:
    return f'li.chat[data-scope="{scope}"]'


def texts_of(selector: str) -> str:
    return (
        f"[...document.querySelectorAll({json.dumps(selector)})]"
        ".filter((el) => !el.hidden).map((el) => el.textContent)"
    )


async def test_each_accounts_row_and_page_say_which_account_in_a_real_browser(plugin) -> None:
    assert CHROMIUM is not None
    await talk(plugin, HOME, "大家好", "你好")
    panel = build_panel_app(plugin, GroupNames())
    shots = screenshots_dir()

    async with serving(panel.app) as root, chromium_page(CHROMIUM) as page:
        # One account so far: the overview looks as it always did, no account label.
        await log_in(page, root)
        await page.wait_for(f"!!document.querySelector({json.dumps(row(GROUP))})")
        assert await page.evaluate(texts_of(".badge.account")) == []

        # The second account answers in the same group and saves a memory there.
        memory_id = saved_id(
            await model_calls_one(
                plugin,
                RecordingBot(SECOND),
                heard_by(SECOND, "记住群主喜欢爬山", user_id=2002),
                "memory_save",
                {"content": "群主喜欢爬山"},
            )
        )
        await page.goto(f"{root}{BASE}/")
        await page.wait_for(f"!!document.querySelector({json.dumps(row(SECONDS_WINDOW))})")
        home_row = await page.evaluate(text_of(row(GROUP)))
        second_row = await page.evaluate(text_of(row(SECONDS_WINDOW)))
        assert f"账号 {HOME}（首个账号）" in home_row
        assert f"账号 {SECOND}" in second_row
        assert "首个账号" not in second_row
        assert GROUP_NAME in home_row
        assert GROUP_NAME in second_row
        assert (
            await page.evaluate(
                f"document.querySelector({json.dumps(row(SECONDS_WINDOW))}).dataset.account"
            )
            == SECOND
        )
        await page.screenshot(shots / "overview-accounts.png")

        # The second account's page: its window and usage, the chat's memories and log.
        await page.click(f"{row(SECONDS_WINDOW)} a")
        await page.wait_for(
            "location.pathname.includes('/chats/') && document.body.dataset.loaded === '1'"
        )
        assert await page.evaluate(text_of("#account")) == f"账号 {SECOND} 的对话和用量"
        assert await page.evaluate(text_of("#title-key")) == SECONDS_WINDOW
        assert await page.evaluate(text_of("#memory-owner")) == "各账号共用"
        assert await page.evaluate(text_of("#chatlog-owner")) == "各账号共用"
        assert await page.evaluate(text_of("#usage-owner")) == f"账号 {SECOND}"
        memory = f'li.memory[data-id="{memory_id}"] .content'
        assert await page.wait_for(text_of(memory)) == "群主喜欢爬山"
        await page.wait_for(f"{texts_of('#chatlog b')}.length >= 4")
        speakers = await page.evaluate(texts_of("#chatlog li.assistant b"))
        assert f"机器人 {HOME}：" in speakers
        assert f"机器人 {SECOND}：" in speakers
        await page.screenshot(shots / "chat-second-account.png")

        # Deleting it there deletes the memory the accounts share.
        await page.click(f'li.memory[data-id="{memory_id}"] button.delete')
        await page.wait_for(f"{text_of(memory)} === null")
        await page.wait_for(f"!!document.querySelector('li.tombstone[data-id=\"{memory_id}\"]')")
        assert await plugin.runtime.memory.service.get(GROUP, memory_id) is None

    await panel.data.close()

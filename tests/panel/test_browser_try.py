"""The try page in a real headless Chromium: open it, log in (the form leads back to it), @
the bot in the test group, type, press Enter, see the answer; then the model saves a memory
with `memory_save`: the answer's details show the call and its result, and the memory is
listed beside the conversation. A screenshot of the page mid-conversation is saved
(AIMEMORY_SCREENSHOTS_DIR, or a folder in the system temp directory).

Skipped only when no Chromium binary is installed (Debian: `apt-get install chromium`)."""

from __future__ import annotations

import json

import pytest

from tests.fakes.openai_server import text, tool_calls
from tests.panel.browser import Page, chromium_binary, chromium_page, serving
from tests.panel.conftest import BASE, PANEL_TOKEN, build_panel_app
from tests.panel.test_browser import screenshots_dir

CHROMIUM = chromium_binary()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium binary on PATH (Debian: apt-get install -y chromium; or set CHROMIUM)",
    ),
]

SAVED = "小明喜欢爬山"


def texts_of(selector: str) -> str:
    return (
        f"Array.from(document.querySelectorAll({json.dumps(selector)})).map((el) => el.textContent)"
    )


async def say_to_the_bot(page: Page, words: str) -> None:
    """@ the bot, type, press Enter."""
    await page.click('#ats button[data-at="bot"]')
    await page.type_into("#text", words)
    await page.press_enter()


async def test_chat_with_the_bot_and_see_a_saved_memory_in_a_real_browser(plugin) -> None:
    assert CHROMIUM is not None
    panel = build_panel_app(plugin)
    plugin.llm.script(
        text("你好呀，我是小忆。"),
        tool_calls(("memory_save", {"content": SAVED})),
        text("记住啦，你喜欢爬山！"),
    )
    shot = screenshots_dir() / "try.png"

    async with serving(panel.app) as root, chromium_page(CHROMIUM, 760, 1100) as page:
        await page.goto(f"{root}{BASE}/try")
        await page.type_into('input[name="token"]', PANEL_TOKEN)
        await page.press_enter()
        await page.wait_for(
            f"location.pathname === '{BASE}/try' && document.body.dataset.loaded === '1'"
        )

        await say_to_the_bot(page, "你好")
        await page.wait_for(f"{texts_of('li.msg.bot .msg-text')}.includes('你好呀，我是小忆。')")

        await say_to_the_bot(page, "记住我喜欢爬山")
        await page.wait_for(f"{texts_of('li.msg.bot .msg-text')}.includes('记住啦，你喜欢爬山！')")
        await page.wait_for(f"{texts_of('#memories li.memory .content')}.includes({SAVED!r})")

        # The answer's details: the memory_save call and what it returned.
        await page.click("li.msg.bot:last-of-type details.turn-details summary")
        tool = await page.wait_for(
            "(() => { const d = document.querySelector('li.msg.bot:last-of-type details[open]');"
            " return d ? d.querySelector('.tools').textContent : null; })()"
        )
        assert "memory_save" in tool
        assert "已保存记忆 #" in tool
        await page.evaluate("window.scrollTo(0, 0)")
        await page.screenshot(shot)

    await panel.data.close()
    assert shot.stat().st_size > 1000

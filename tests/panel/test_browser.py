"""The panel in a real headless Chromium, driven over the DevTools protocol: log in with
the token (Enter submits), find the group that talked to the bot in the overview, open it,
see the memory the model saved with `memory_save`, edit it and delete it; `~记忆 列表` in
QQ then no longer shows it, `~记忆 恢复` brings it back and the page shows it again; the
usage chart is drawn. Screenshots of both pages are saved (AIMEMORY_SCREENSHOTS_DIR, or a
folder in the system temp directory), never committed.

Skipped only when no Chromium binary is installed (Debian: `apt-get install chromium`)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import command, model_calls_one, saved_id
from tests.panel.browser import chromium_binary, chromium_page, serving
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

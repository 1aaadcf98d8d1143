"""The persona catalog is kept in memory: `~人设 列表` lists it after a look at the folder's
listing (names, sizes, times), and the files are read again only when that changed. A file
added, removed or edited shows up on the next list, with real files in a real folder."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import text
from tests.memory.helpers import command

CAT = "你是一只猫娘，说话句尾带“喵”。"
# The same number of characters and bytes as CAT: an edit its size cannot tell.
DOG = "你是一只狗狗，说话句尾带“汪”。"
AN_HOUR_AGO = time.time() - 3600


def write_persona(folder: Path, name: str, body: str, *, mtime: float | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(body, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def listed(answer: str) -> list[str]:
    """The persona names of a `~人设 列表` answer."""
    return [line[1:].removesuffix("（当前）") for line in answer.splitlines() if line[:1] == "・"]


@pytest.fixture
def folder(plugin) -> Path:
    """Where the plugin reads persona files (beside its database)."""
    return Path(plugin.db_path).parent / "personas"


async def list_personas(bot: RecordingBot) -> list[str]:
    return listed(await command(bot, group_message("~人设 列表")))


async def test_a_file_added_shows_up_on_the_next_list(plugin, folder) -> None:
    bot = RecordingBot()
    before = await list_personas(bot)

    write_persona(folder, "猫娘", CAT)

    assert before == ["默认"]
    assert await list_personas(bot) == ["默认", "猫娘"]


async def test_a_file_removed_is_gone_from_the_next_list(plugin, folder) -> None:
    bot = RecordingBot()
    cat = write_persona(folder, "猫娘", CAT, mtime=AN_HOUR_AGO)
    write_persona(folder, "学习助手", "你是一位耐心的学习助手。", mtime=AN_HOUR_AGO)
    before = await list_personas(bot)

    cat.unlink()

    assert before == ["默认", "学习助手", "猫娘"]
    assert await list_personas(bot) == ["默认", "学习助手"]


async def test_a_file_edited_to_nothing_leaves_the_list_and_comes_back_when_fixed(
    plugin, folder
) -> None:
    bot = RecordingBot()
    write_persona(folder, "猫娘", CAT, mtime=AN_HOUR_AGO)
    before = await list_personas(bot)

    write_persona(folder, "猫娘", "   ")
    emptied = await list_personas(bot)
    write_persona(folder, "猫娘", CAT)

    assert before == ["默认", "猫娘"]
    assert emptied == ["默认"]
    assert await list_personas(bot) == ["默认", "猫娘"]


async def test_an_edited_prompt_is_the_one_the_persona_plays(plugin, folder) -> None:
    bot = RecordingBot()
    cat = write_persona(folder, "猫娘", CAT, mtime=AN_HOUR_AGO)
    await list_personas(bot)

    cat.write_text(DOG, encoding="utf-8")
    await list_personas(bot)
    await command(bot, group_message("~人设 切换 猫娘", role="admin"))
    plugin.llm.script(text("汪"))
    await bot.receive(group_message("你是谁", to_me=True))

    system = plugin.llm.last_messages()[0]["content"]
    assert DOG in system
    assert CAT not in system


async def test_an_unchanged_folder_is_not_read_again(tmp_path, monkeypatch) -> None:
    from nonebot_plugin_aimemory.personas import catalog as catalog_module

    folder = tmp_path / "personas"
    write_persona(folder, "猫娘", CAT, mtime=AN_HOUR_AGO)
    write_persona(folder, "学习助手", "你是一位耐心的学习助手。", mtime=AN_HOUR_AGO)
    reads: list[str] = []
    read_file = catalog_module._read_file

    def counted(path: Path):
        reads.append(path.name)
        return read_file(path)

    monkeypatch.setattr(catalog_module, "_read_file", counted)
    catalog = catalog_module.PersonaCatalog(folder, "你是默认助手。")

    for _ in range(5):
        await catalog.reload()

    assert sorted(reads) == ["学习助手.md", "猫娘.md"]
    assert catalog.names() == ["默认", "学习助手", "猫娘"]


async def test_an_edit_of_the_same_size_is_read(tmp_path) -> None:
    from nonebot_plugin_aimemory.personas.catalog import PersonaCatalog

    folder = tmp_path / "personas"
    cat = write_persona(folder, "猫娘", CAT, mtime=AN_HOUR_AGO)
    catalog = PersonaCatalog(folder, "你是默认助手。")
    await catalog.reload()

    cat.write_text(DOG, encoding="utf-8")
    await catalog.reload()

    persona = catalog.get("猫娘")
    assert len(DOG.encode()) == len(CAT.encode())
    assert persona is not None
    assert persona.prompt == DOG


async def test_a_file_replaced_by_a_rename_is_read(tmp_path) -> None:
    from nonebot_plugin_aimemory.personas.catalog import PersonaCatalog

    folder = tmp_path / "personas"
    write_persona(folder, "猫娘", CAT, mtime=AN_HOUR_AGO)
    catalog = PersonaCatalog(folder, "你是默认助手。")
    await catalog.reload()

    # Editors save by writing a new file and renaming it over the old one.
    replacement = write_persona(tmp_path, "new", DOG, mtime=AN_HOUR_AGO)
    os.replace(replacement, folder / "猫娘.md")
    await catalog.reload()

    persona = catalog.get("猫娘")
    assert persona is not None
    assert persona.prompt == DOG

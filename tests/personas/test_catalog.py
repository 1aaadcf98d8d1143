"""The persona catalog: files in the personas folder, bad ones skipped with a log line."""

from __future__ import annotations

import logging

import pytest


def catalog(tmp_path):
    from nonebot_plugin_aimemory.personas.catalog import PersonaCatalog

    return PersonaCatalog(tmp_path / "personas", "你是默认助手。")


async def test_a_missing_folder_is_created_empty_and_only_the_default_exists(tmp_path) -> None:
    personas = catalog(tmp_path)
    await personas.reload()

    assert (tmp_path / "personas").is_dir()
    assert personas.names() == ["默认"]
    assert personas.get("默认").prompt == "你是默认助手。"


async def test_each_md_file_is_a_persona_named_after_it(tmp_path) -> None:
    folder = tmp_path / "personas"
    folder.mkdir()
    (folder / "学习助手.md").write_text("你是一个耐心的学习助手。", encoding="utf-8")
    (folder / "猫娘.md").write_text(
        "---\nmodel: deepseek-chat\n---\n你是一只猫娘，句尾加喵。", "utf-8"
    )
    (folder / "notes.txt").write_text("不是人设", encoding="utf-8")
    personas = catalog(tmp_path)
    await personas.reload()

    assert personas.names() == ["默认", "学习助手", "猫娘"]
    cat = personas.get("猫娘")
    assert cat.prompt == "你是一只猫娘，句尾加喵。"
    assert cat.model == "deepseek-chat"
    assert personas.get("学习助手").model is None


async def test_a_file_added_later_is_found_by_the_next_reload(tmp_path) -> None:
    personas = catalog(tmp_path)
    await personas.reload()
    (tmp_path / "personas" / "新人设.md").write_text("新的提示词", encoding="utf-8")

    await personas.reload()

    assert "新人设" in personas.names()


@pytest.mark.parametrize(
    ("file_name", "content"),
    [
        ("空的.md", "   \n"),
        ("太长.md", "长" * 20_001),
        ("巨大.md", b"x" * 200_000),
        ("乱码.md", b"\xff\xfe\x00bad"),
        ("没结束.md", "---\nmodel: x\n正文"),
    ],
    ids=["empty", "too long", "huge", "not utf-8", "unclosed front matter"],
)
async def test_a_bad_file_is_skipped_with_a_log_line_naming_it(
    tmp_path, plugin_log, file_name, content
) -> None:
    folder = tmp_path / "personas"
    folder.mkdir()
    path = folder / file_name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    (folder / "好的.md").write_text("正常的人设", encoding="utf-8")
    personas = catalog(tmp_path)
    await personas.reload()

    assert personas.names() == ["默认", "好的"]
    warnings = [r.getMessage() for r in plugin_log.records if r.levelno == logging.WARNING]
    assert any(file_name in w for w in warnings)


@pytest.mark.parametrize(
    "name",
    ["../etc", "a/b", "..", ".hidden", "x" * 200, "tab\tname", "", " 空格", "a#b"],
)
def test_names_with_path_or_control_characters_or_too_long_are_not_persona_names(name) -> None:
    from nonebot_plugin_aimemory.personas.catalog import is_valid_persona_name

    assert not is_valid_persona_name(name)


@pytest.mark.parametrize("name", ["猫娘", "学习助手", "Study Buddy", "助手2号"])
def test_ordinary_names_are_persona_names(name) -> None:
    from nonebot_plugin_aimemory.personas.catalog import is_valid_persona_name

    assert is_valid_persona_name(name)


async def test_a_file_named_like_the_default_does_not_replace_it(tmp_path) -> None:
    folder = tmp_path / "personas"
    folder.mkdir()
    (folder / "默认.md").write_text("冒充默认", encoding="utf-8")
    personas = catalog(tmp_path)
    await personas.reload()

    assert personas.get("默认").prompt == "你是默认助手。"


def test_a_persona_key_round_trips_to_its_chat_and_persona() -> None:
    from nonebot_plugin_aimemory.scopes import Scope

    assert str(Scope.group(111).with_persona("默认")) == "g:111"
    assert str(Scope.group(111).with_persona("猫娘")) == "g:111#猫娘"
    assert Scope.parse("g:111#猫娘").chat_key == "g:111"
    assert Scope.parse("f:5").chat_key == "f:5"
    assert Scope.parse("u:5#猫娘").persona_name == "猫娘"
    assert Scope.parse("g:111").persona_name == "默认"

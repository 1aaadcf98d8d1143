"""Personas end to end: persona files in the plugin's folder, `~人设` commands through
NoneBot, and what the next LLM request carries. Each persona has its own window and memories
in a chat; the chat log is shared; the choice survives a restart and an eviction."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import text
from tests.memory.helpers import command, model_calls_one, saved_id

GROUP = 811
CAT_PROMPT = "你是一只猫娘，说话句尾带“喵”。"
TUTOR_PROMPT = "你是一位耐心的学习助手。"


def personas_dir(plugin) -> Path:
    """Where the harness's runtime reads persona files (beside the database)."""
    return Path(plugin.db_path).parent / "personas"


def write_persona(plugin, name: str, body: str) -> None:
    folder = personas_dir(plugin)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(body, encoding="utf-8")


def admin(content: str, **kwargs):
    return group_message(content, group_id=GROUP, role="admin", user_id=2100, **kwargs)


def member(content: str, **kwargs):
    return group_message(content, group_id=GROUP, user_id=2001, **kwargs)


async def ask(plugin, bot: RecordingBot, content: str, reply: str = "好的") -> list[dict]:
    """A member asks the bot; returns the messages of the request it made."""
    plugin.llm.script(text(reply))
    await bot.receive(member(content, to_me=True))
    return plugin.llm.last_messages()


def system_of(messages: list[dict]) -> str:
    assert messages[0]["role"] == "system"
    return messages[0]["content"]


@pytest.fixture
def bot() -> RecordingBot:
    return RecordingBot()


@pytest.fixture
def with_personas(plugin) -> None:
    write_persona(plugin, "猫娘", CAT_PROMPT)
    write_persona(plugin, "学习助手", f"---\nmodel: tutor-model\n---\n{TUTOR_PROMPT}\n")


async def test_the_personas_folder_is_created_empty_at_startup(plugin) -> None:
    assert personas_dir(plugin).is_dir()
    assert list(personas_dir(plugin).iterdir()) == []


async def test_the_list_names_every_persona_and_marks_the_current_one(
    plugin, bot, with_personas
) -> None:
    answer = await command(bot, member("~人设 列表"))

    assert answer.splitlines()[:4] == ["可用人设：", "・默认（当前）", "・学习助手", "・猫娘"]


async def test_a_new_file_counts_without_a_restart(plugin, bot) -> None:
    write_persona(plugin, "新来的", "你是新来的。")

    assert "・新来的" in await command(bot, member("~人设 列表"))


async def test_a_switch_changes_the_system_prompt_of_the_next_request(
    plugin, bot, with_personas
) -> None:
    before = system_of(await ask(plugin, bot, "你好"))

    answer = await command(bot, admin("~人设 切换 猫娘"))
    after = system_of(await ask(plugin, bot, "你好"))

    assert "猫娘" in answer
    assert CAT_PROMPT not in before
    assert after.startswith(CAT_PROMPT)
    assert str(GROUP) in after


async def test_a_persona_with_its_own_model_answers_with_that_model(
    plugin, bot, with_personas
) -> None:
    await command(bot, admin("~人设 切换 学习助手"))
    await ask(plugin, bot, "今天学什么")

    assert plugin.llm.chat_requests[-1]["model"] == "tutor-model"


async def test_members_cannot_switch_personas_in_a_group(plugin, bot, with_personas) -> None:
    answer = await command(bot, member("~人设 切换 猫娘"))

    assert answer == "只有群主、群管理员或机器人超级用户可以这样做。"
    assert await command(bot, member("~人设 当前")) == "当前人设：默认"


async def test_in_private_chat_the_person_switches(plugin, bot, with_personas) -> None:
    answer = await command(bot, private_message("~人设 切换 猫娘", user_id=3001))
    plugin.llm.script(text("喵"))
    await bot.receive(private_message("在吗", user_id=3001))

    assert "猫娘" in answer
    assert system_of(plugin.llm.last_messages()).startswith(CAT_PROMPT)


@pytest.mark.parametrize(
    "name", ["不存在", "../etc/passwd", "a/b", "x" * 200, "默认#猫娘"], ids=str.__len__
)
async def test_switching_to_a_persona_that_does_not_exist_keeps_the_current_one(
    plugin, bot, with_personas, name
) -> None:
    await command(bot, admin("~人设 切换 猫娘"))

    answer = await command(bot, admin(f"~人设 切换 {name}"))

    assert answer.startswith("没有名为「")
    assert "仍然是「猫娘」" in answer
    assert len(answer) < 120  # a 200-character name is not echoed whole
    assert await command(bot, member("~人设 当前")) == "当前人设：猫娘"


async def test_a_deleted_persona_file_leaves_the_chat_on_the_default(
    plugin, bot, with_personas
) -> None:
    await command(bot, admin("~人设 切换 猫娘"))
    (personas_dir(plugin) / "猫娘.md").unlink()

    assert await command(bot, member("~人设 当前")) == "当前人设：默认"
    assert CAT_PROMPT not in system_of(await ask(plugin, bot, "你好"))


async def test_each_persona_keeps_its_own_window(plugin, bot, with_personas) -> None:
    await ask(plugin, bot, "默认人设下说的话")
    await command(bot, admin("~人设 切换 猫娘"))

    under_cat = await ask(plugin, bot, "猫娘人设下说的话")
    await command(bot, admin("~人设 切换 默认"))
    back = await ask(plugin, bot, "回到默认")

    cat_texts = " ".join(str(m["content"]) for m in under_cat)
    back_texts = " ".join(str(m["content"]) for m in back)
    assert "默认人设下说的话" not in cat_texts
    assert "默认人设下说的话" in back_texts
    assert "猫娘人设下说的话" not in back_texts


async def test_memories_saved_under_one_persona_are_invisible_under_another(
    plugin, bot, with_personas
) -> None:
    await command(bot, admin("~人设 切换 猫娘"))
    saved = saved_id(
        await model_calls_one(
            plugin, bot, member("记住", to_me=True), "memory_save", {"content": "群里的猫叫豆豆"}
        )
    )
    await command(bot, admin("~人设 切换 默认"))

    under_default = await model_calls_one(
        plugin, bot, member("查", to_me=True), "memory_search", {"query": "豆豆"}
    )
    listed_default = await command(bot, admin("~记忆 列表"))
    await command(bot, admin("~人设 切换 猫娘"))
    under_cat = await model_calls_one(
        plugin, bot, member("查", to_me=True), "memory_search", {"query": "豆豆"}
    )

    assert saved not in under_default
    assert "豆豆" not in under_default
    assert "豆豆" not in listed_default
    assert f"#{saved}" in under_cat


async def test_the_chat_log_is_shared_by_every_persona(plugin, bot, with_personas) -> None:
    await ask(plugin, bot, "默认人设时说过火锅")
    await command(bot, admin("~人设 切换 猫娘"))

    found = await model_calls_one(
        plugin, bot, member("查", to_me=True), "search_current_chat", {"keyword": "火锅"}
    )

    assert "默认人设时说过火锅" in found


async def test_status_commands_name_the_current_persona(plugin, bot, with_personas) -> None:
    await command(bot, admin("~人设 切换 猫娘"))

    dialog = await command(bot, member("~对话 状态"))
    memory = await command(bot, member("~记忆 状态"))

    assert dialog.splitlines()[0] == "当前人设：猫娘"
    assert memory.splitlines()[0] == "当前人设：猫娘"


async def test_without_personas_status_shows_no_persona_line(plugin, bot) -> None:
    assert "人设" not in await command(bot, member("~对话 状态"))


async def test_clearing_acts_on_the_current_persona_window_only(plugin, bot, with_personas) -> None:
    await ask(plugin, bot, "默认人设的上下文")
    await command(bot, admin("~人设 切换 猫娘"))
    await ask(plugin, bot, "猫娘的上下文")

    await command(bot, admin("~对话 清空"))
    after_clear = await ask(plugin, bot, "清空之后")
    await command(bot, admin("~人设 切换 默认"))
    default_again = await ask(plugin, bot, "回来了")

    assert "猫娘的上下文" not in " ".join(str(m["content"]) for m in after_clear)
    assert "默认人设的上下文" in " ".join(str(m["content"]) for m in default_again)


async def test_the_choice_and_windows_survive_a_restart_and_an_eviction(
    plugin, bot, with_personas
) -> None:
    await command(bot, admin("~人设 切换 猫娘"))
    await ask(plugin, bot, "重启之前的猫娘对话")

    runtime = await plugin.restart()
    after_restart = await ask(plugin, bot, "重启之后")
    runtime.sessions.max_idle_seconds = 0.001
    await asyncio.sleep(0.01)
    assert await runtime.sessions.evict_idle_sessions() >= 1
    after_eviction = await ask(plugin, bot, "驱逐之后")

    for messages in (after_restart, after_eviction):
        assert system_of(messages).startswith(CAT_PROMPT)
        assert "重启之前的猫娘对话" in " ".join(str(m["content"]) for m in messages)


async def stored_rows(plugin, key: str) -> int:
    rows = await plugin.runtime.database.read(
        "SELECT COUNT(*) FROM messages WHERE session_key = ?", (key,)
    )
    return rows[0][0]


async def test_auto_clear_clears_the_current_persona_window_only(
    plugin, bot, with_personas
) -> None:
    await plugin.restart(aimemory_group_autoclear_after=3)
    await ask(plugin, bot, "默认人设的话")
    await command(bot, admin("~人设 切换 猫娘"))
    await ask(plugin, bot, "猫娘人设的话")
    cat_key = f"g:{GROUP}#猫娘"
    assert await stored_rows(plugin, cat_key) == 2

    for i in range(3):
        await bot.receive(member(f"闲聊{i}"))
    await plugin.runtime.autoclear._background.wait()

    assert await stored_rows(plugin, cat_key) == 0
    assert await stored_rows(plugin, f"g:{GROUP}") == 2
    assert "猫娘人设的话" not in str(await ask(plugin, bot, "还记得吗"))


async def test_a_group_with_only_a_persona_window_still_auto_clears_after_a_restart(
    plugin, bot, with_personas
) -> None:
    await command(bot, admin("~人设 切换 猫娘"))
    await ask(plugin, bot, "只在猫娘人设下聊过")
    await plugin.restart(aimemory_group_autoclear_after=2)

    for i in range(2):
        await bot.receive(member(f"闲聊{i}"))
    await plugin.runtime.autoclear._background.wait()

    assert await stored_rows(plugin, f"g:{GROUP}#猫娘") == 0

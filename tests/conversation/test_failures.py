"""Bad days: the LLM fails, the API key is missing, the database cannot be opened."""

from __future__ import annotations

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import delay, error, raw, text


async def test_llm_500_gets_an_apology_and_the_session_keeps_working(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    plugin.llm.script(error(500), error(500))
    bot = RecordingBot()
    await bot.receive(private_message("第一句"))
    plugin.llm.script(text("恢复了"))
    await bot.receive(private_message("第二句"))
    assert bot.sent_texts == [texts.LLM_UNAVAILABLE, "恢复了"]


async def test_a_failed_question_is_kept_and_the_next_request_is_valid(plugin) -> None:
    plugin.llm.script(error(503), error(503))
    bot = RecordingBot()
    await bot.receive(private_message("第一句"))
    await bot.receive(private_message("第二句"))
    users = [m for m in plugin.llm.last_messages() if m["role"] == "user"]
    # The fake server rejects two user messages in a row: they were merged into one.
    assert len(users) == 1
    assert "第一句" in users[0]["content"]
    assert "第二句" in users[0]["content"]


async def test_llm_timeout_gets_a_timeout_apology_and_the_session_keeps_working(
    plugin,
) -> None:
    from nonebot_plugin_aimemory import texts

    await plugin.restart(aimemory_request_timeout=0.3)
    plugin.llm.script(delay(1.0, text("太晚了")))
    bot = RecordingBot()
    await bot.receive(private_message("在吗"))
    plugin.llm.script(text("在的"))
    await bot.receive(private_message("现在呢"))
    assert bot.sent_texts == [texts.LLM_TIMEOUT, "在的"]


async def test_garbage_from_the_llm_gets_an_apology_and_the_session_keeps_working(
    plugin,
) -> None:
    from nonebot_plugin_aimemory import texts

    plugin.llm.script(raw(200, "<html>502 Bad Gateway</html>", content_type="text/html"))
    bot = RecordingBot()
    await bot.receive(private_message("在吗"))
    plugin.llm.script(raw(200, '{"choices": []}'))
    await bot.receive(private_message("在吗"))
    plugin.llm.script(text("好了"))
    await bot.receive(private_message("现在呢"))
    assert bot.sent_texts == [texts.LLM_UNAVAILABLE, texts.LLM_UNAVAILABLE, "好了"]


async def test_a_failure_is_logged_with_session_model_status_and_body(plugin, plugin_log) -> None:
    plugin.llm.script(error(500, "upstream exploded"), error(500, "upstream exploded"))
    await RecordingBot().receive(private_message("在吗", user_id=77))

    lines = [r.getMessage() for r in plugin_log.records if "LLM failed" in r.getMessage()]
    assert len(lines) == 1
    assert "f:77" in lines[0]
    assert "model=fake-model" in lines[0]
    assert "status=500" in lines[0]
    assert "upstream exploded" in lines[0]


@pytest.mark.parametrize("status", [401, 402, 403])
async def test_a_rejected_key_or_empty_balance_is_named_and_not_retried(
    plugin, status: int
) -> None:
    from nonebot_plugin_aimemory import texts

    plugin.llm.script(error(status))
    bot = RecordingBot()
    await bot.receive(private_message("在吗"))
    assert bot.sent_texts == [texts.LLM_ACCOUNT_PROBLEM]
    assert len(plugin.llm.chat_requests) == 1


async def test_an_apology_goes_into_the_chat_log_like_any_reply(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    plugin.llm.script(error(500), error(500))
    await RecordingBot().receive(private_message("在吗", user_id=78))
    await plugin.runtime.chat_log.flush()

    rows = await plugin.runtime.chat_log.writer.store.recent("f:78", 10)
    assert [(r.role, r.text) for r in rows] == [
        ("user", "在吗"),
        ("assistant", texts.LLM_UNAVAILABLE),
    ]


async def test_an_answer_empty_however_asked_gets_a_short_note(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    # given a model that says nothing but its thoughts, with tools, without choice, without
    plugin.llm.script(*[text("<think>嗯……</think>")] * 3)
    bot = RecordingBot()
    await bot.receive(private_message("在吗"))
    # then it was asked three ways, and the member gets the short note
    requests = plugin.llm.chat_requests
    assert [(r.get("tool_choice"), "tools" in r) for r in requests] == [
        (None, True),
        ("none", True),
        (None, False),
    ]
    assert bot.sent_texts == [texts.LLM_EMPTY]


async def test_missing_usage_is_estimated_with_the_tokenizer(plugin) -> None:
    plugin.llm.script(text("好的", usage=None))
    bot = RecordingBot()
    await bot.receive(private_message("今天天气不错", user_id=31))
    session = plugin.runtime.sessions.get("f:31")
    assert bot.sent_texts == ["好的"]
    assert 0 < session.bot.context_tokens < 2000  # system prompt + tool specs + two lines


async def test_reported_usage_becomes_the_context_size(plugin) -> None:
    plugin.llm.script(
        text("好的", usage={"prompt_tokens": 1234, "completion_tokens": 5, "total_tokens": 1239})
    )
    bot = RecordingBot()
    await bot.receive(private_message("你好", user_id=32))
    assert plugin.runtime.sessions.get("f:32").bot.context_tokens == 1234


async def test_no_api_key_gets_a_not_configured_reply(plugin, plugin_log) -> None:
    from nonebot_plugin_aimemory import texts

    await plugin.restart(aimemory_api_key="", aimemory_api_base="https://api.openai.com/v1")
    bot = RecordingBot()
    await bot.receive(private_message("你好"))
    await bot.receive(group_message("你好", to_me=True))
    assert bot.sent_texts == [texts.NOT_CONFIGURED, texts.NOT_CONFIGURED]
    assert plugin.llm.chat_requests == []
    assert any("no API key" in r.getMessage() for r in plugin_log.records)


@pytest.mark.parametrize(
    ("api_base", "warned"),
    [
        ("https://api.deepseek.com/v1", True),
        ("http://127.0.0.1:11434/v1", False),
        ("http://localhost:8000/v1", False),
        ("http://192.168.1.20:8000/v1", False),
    ],
)
async def test_no_key_for_a_hosted_api_is_warned_at_startup_but_a_local_server_is_fine(
    plugin, plugin_log, api_base: str, warned: bool
) -> None:
    await plugin.restart(aimemory_api_key="", aimemory_api_base=api_base)

    warnings = [r for r in plugin_log.records if "no API key" in r.getMessage()]
    assert bool(warnings) is warned


async def test_unwritable_database_path_falls_back_to_memory(plugin, plugin_log, tmp_path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    runtime = await plugin.restart(aimemory_db_path=str(blocker / "aimemory.db"))
    assert not runtime.persistent
    assert any("in-memory history only" in r.getMessage() for r in plugin_log.records)
    bot = RecordingBot()
    plugin.llm.script(text("记住了"), text("你说过你叫阿花"))
    await bot.receive(private_message("我叫阿花"))
    await bot.receive(private_message("我叫什么"))
    assert bot.sent_texts == ["记住了", "你说过你叫阿花"]
    assert any("我叫阿花" in str(m["content"]) for m in plugin.llm.last_messages())


async def test_send_failure_does_not_break_the_session(plugin) -> None:
    class FlakyBot(RecordingBot):
        fail_next = True

        async def call_api(self, api, **data):
            if api == "send_msg" and self.fail_next:
                self.fail_next = False
                raise RuntimeError("network down")
            return await super().call_api(api, **data)

    bot = FlakyBot()
    plugin.llm.script(text("第一条"), text("第二条"))
    await bot.receive(private_message("一"))
    await bot.receive(private_message("二"))
    assert bot.sent_texts == ["第二条"]


async def test_a_database_that_fails_mid_run_gets_a_notice_not_a_reply_it_cannot_keep(
    plugin,
) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    plugin.llm.script(text("记住了"))
    await bot.receive(private_message("我叫阿福", user_id=33))
    # The database goes away under the running bot (disk gone): a reply would tell the user
    # that what they said is kept, which it no longer can be.
    await plugin.runtime.database.close()
    plugin.llm.script(text("你叫阿福"))
    await bot.receive(private_message("我叫什么？", user_id=33))
    assert bot.sent_texts == ["记住了", texts.TURN_FAILED]


async def test_a_new_chat_after_the_database_failed_gets_the_notice(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await plugin.runtime.database.close()
    plugin.llm.script(text("你好，新朋友"))
    await bot.receive(private_message("第一次来", user_id=34))
    assert bot.sent_texts == [texts.TURN_FAILED]


async def test_a_command_that_fails_says_so_briefly(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await plugin.runtime.database.close()
    await bot.receive(private_message("~记忆 列表", user_id=35))
    assert bot.sent_texts == [texts.COMMAND_FAILED]


async def fill_the_disk(plugin) -> None:
    """Let the database file grow no more: every write that needs a new page fails with
    SQLITE_FULL ("database or disk is full"), as on a full disk."""
    database = plugin.runtime.database
    ((pages,),) = await database.read("PRAGMA page_count")
    await database.read(f"PRAGMA max_page_count = {int(pages)}")


async def free_the_disk(plugin) -> None:
    await plugin.runtime.database.read("PRAGMA max_page_count = 1073741823")


async def test_a_full_disk_fails_the_turn_and_loses_nothing_once_space_is_back(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    plugin.llm.script(text("记住了"))
    await bot.receive(private_message("我叫阿福", user_id=41))
    await fill_the_disk(plugin)
    pasted = "我的购物清单：" + "苹果香蕉橙子" * 1000  # long, but under the paste cut

    plugin.llm.script(text("清单收到"))  # answered, but it cannot be stored: not sent
    await bot.receive(private_message(pasted, user_id=41))
    await plugin.runtime.chat_log.flush()  # fails: the rows wait in memory
    await free_the_disk(plugin)
    plugin.llm.script(text("好的"))
    await bot.receive(private_message("空间够了吗", user_id=41))
    await plugin.restart()
    plugin.llm.script(text("你叫阿福"))
    await bot.receive(private_message("我叫什么？", user_id=41))

    assert bot.sent_texts == ["记住了", texts.TURN_FAILED, "好的", "你叫阿福"]
    contents = [str(m["content"]) for m in plugin.llm.last_messages()]
    assert any("我叫阿福" in c for c in contents)
    assert any(pasted in c for c in contents)  # kept like a message whose answer failed
    assert "清单收到" not in contents  # the answer nobody saw is not in the history
    await plugin.runtime.chat_log.flush()
    logged = [r.text for r in await plugin.runtime.chat_log.writer.store.recent("f:41", 20)]
    assert logged == [
        "我叫阿福", "记住了", pasted, texts.TURN_FAILED, "空间够了吗", "好的", "我叫什么？", "你叫阿福"
    ]  # fmt: skip

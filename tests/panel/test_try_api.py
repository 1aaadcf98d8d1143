"""The try page's API over the real plugin and the fake model: a message goes through the
same turn, provider, memory and commands as a QQ message, and the answer comes back with
what the turn did; the model's failures show their real notice and the provider's words;
test chats are apart from real ones (reached only here, listed and counted as tests,
cleared for good); a long paste, two messages at once, a page gone and a restart in the
middle of an answer leave every chat answering."""

from __future__ import annotations

import asyncio
import json
import threading

from tests.conversation.test_bursts import wait_until
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import deepseek_bad_key, delay, error, held, text, tool_calls
from tests.panel.conftest import BASE, PANEL_TOKEN

TRY = f"{BASE}/api/try"
GROUP = "g:90000000000000000001"
XIAOMING = "90000000000000000011"
XIAOHONG = "90000000000000000012"
PRIVATE = f"f:{XIAOMING}"


async def say(client, chat: str, text_: str, speaker: str = XIAOMING, **extra) -> dict:
    response = await client.post(
        f"{TRY}/{chat}/messages", json={"speaker": speaker, "text": text_, **extra}
    )
    assert response.status_code == 200, response.text
    return response.json()


def waiting_messages(plugin, speaker: str) -> int:
    """How many of `speaker`'s messages in the test group wait for their turn."""
    burst = plugin.runtime.conversation.bursts.find(GROUP, speaker)
    return burst.message_count if burst is not None else 0


def model_saw(plugin) -> str:
    """The last request's messages, as one text."""
    return json.dumps(plugin.llm.last_messages(), ensure_ascii=False)


async def test_the_try_page_is_behind_the_login_and_the_login_leads_back_to_it(
    anonymous,
) -> None:
    page = await anonymous.get(f"{BASE}/try")
    assert page.status_code == 401
    assert 'name="next" value="try"' in page.text
    assert (await anonymous.get(TRY)).status_code == 401

    login = await anonymous.post(f"{BASE}/login", data={"token": PANEL_TOKEN, "next": "try"})
    assert login.status_code == 303
    assert login.headers["location"] == f"{BASE}/try"
    page = await anonymous.get(f"{BASE}/try")
    assert page.status_code == 200
    assert f"{BASE}/static/try.js" in page.text
    # Anything else as `next` leads to the overview, never elsewhere.
    again = await anonymous.post(
        f"{BASE}/login", data={"token": PANEL_TOKEN, "next": "https://evil.example/"}
    )
    assert again.headers["location"] == f"{BASE}/"


async def test_a_private_message_is_answered_by_the_same_turn_as_a_qq_message(
    plugin, panel_client
) -> None:
    plugin.llm.script(text("你好呀，**小明**"))

    answer = await say(panel_client, PRIVATE, "你好")

    assert answer["messages"] == ["你好呀，小明"]  # Markdown dropped, as QQ gets it
    assert answer["from_model"] is True
    request = plugin.llm.last_messages()
    assert request[0]["role"] == "system"
    assert request[-1]["content"].startswith("[")  # the time prefix of every user line
    assert request[-1]["content"].endswith("] 你好")
    history = (await panel_client.get(f"{TRY}/{PRIVATE}/history")).json()
    assert [(row["role"], row["text"]) for row in history] == [
        ("user", "你好"),
        ("assistant", "你好呀，**小明**"),
    ]


async def test_in_the_group_the_bot_answers_only_what_is_for_it(plugin, panel_client) -> None:
    ignored = await say(panel_client, GROUP, "大家好")
    assert ignored["messages"] == []
    assert ignored["addressed"] is False
    assert plugin.llm.chat_requests == []

    plugin.llm.script(text("我在"), text("好呀"))
    await say(panel_client, GROUP, "在吗", at=["bot"])
    replied = await say(
        panel_client,
        GROUP,
        "一起去吗",
        speaker=XIAOHONG,
        at=[XIAOMING],
        reply={"speaker": "bot", "text": "我在"},
    )

    assert replied["messages"] == ["好呀"]
    line = plugin.llm.last_messages()[-1]["content"]
    assert f"小红({XIAOHONG})：[引用 机器人：我在]\n@小明 一起去吗" in line


async def test_the_commands_answer_as_in_qq_without_the_model(plugin, panel_client) -> None:
    from nonebot_plugin_aimemory import texts

    listing = await say(panel_client, GROUP, "~记忆 列表")
    status = await say(panel_client, PRIVATE, "~对话 状态")
    persona = await say(panel_client, PRIVATE, "~人设 列表")

    assert listing["messages"] == [texts.MEMORY_EMPTY]
    assert listing["command"] is True
    assert "上下文" in status["messages"][0]
    assert "默认" in persona["messages"][0]
    assert plugin.llm.chat_requests == []


async def test_a_saved_memory_shows_in_the_details_the_list_and_the_next_answers_notes(
    plugin, panel_client
) -> None:
    plugin.llm.script(
        tool_calls(("memory_save", {"content": "小明喜欢爬山"})), text("记住啦"), text("爬山！")
    )

    saved = await say(panel_client, PRIVATE, "记住我喜欢爬山")
    (use,) = saved["details"]["tools"]
    assert use["name"] == "memory_save"
    assert json.loads(use["arguments"]) == {"content": "小明喜欢爬山"}
    assert use["result"].startswith("已保存记忆 #")
    listed = (await panel_client.get(f"{BASE}/api/chats/{PRIVATE}/memories")).json()
    assert [m["content"] for m in listed] == ["小明喜欢爬山"]

    later = await say(panel_client, PRIVATE, "我喜欢什么运动？爬山吗")
    assert "小明喜欢爬山" in later["details"]["memories"]
    assert later["details"]["memories"] in model_saw(plugin).replace("\\n", "\n")


async def test_a_rejected_request_shows_the_apology_and_what_the_provider_said(
    plugin, panel_client
) -> None:
    from nonebot_plugin_aimemory import texts

    plugin.llm.script(error(400, "The model `gpt-9` does not exist", code="model_not_found"))

    answer = await say(panel_client, PRIVATE, "你好")

    assert answer["messages"] == [texts.LLM_REQUEST_REJECTED]
    failure = answer["details"]["failure"]
    assert (failure["status"], failure["code"]) == (400, "model_not_found")
    assert "The model `gpt-9` does not exist" in failure["text"]


async def test_a_wrong_key_shows_the_qq_notice_once_and_the_providers_words_every_time(
    plugin, panel_client
) -> None:
    from nonebot_plugin_aimemory import texts

    plugin.llm.script(deepseek_bad_key(), deepseek_bad_key())

    first = await say(panel_client, PRIVATE, "你好")
    second = await say(panel_client, PRIVATE, "还在吗")

    assert first["messages"] == [texts.LLM_ACCOUNT_PROBLEM]
    assert second["messages"] == []  # QQ's notice is at most once in ten minutes
    for answer in (first, second):
        assert answer["details"]["failure"]["kind"] == "account"
        assert answer["details"]["failure"]["status"] == 401


async def test_a_model_that_times_out_or_is_not_configured_says_so(plugin, panel_client) -> None:
    from nonebot_plugin_aimemory import texts

    await plugin.restart(aimemory_request_timeout=0.3, aimemory_llm_max_retries=0)
    plugin.llm.script(delay(1.5, text("太慢了")))
    slow = await say(panel_client, PRIVATE, "你好")
    assert slow["messages"] == [texts.LLM_TIMEOUT]
    assert slow["details"]["failure"]["kind"] == "timeout"

    await plugin.restart(aimemory_api_key="", aimemory_api_base="https://api.openai.com/v1")
    unconfigured = await say(panel_client, PRIVATE, "你好")
    assert unconfigured["messages"] == [texts.NOT_CONFIGURED]
    assert (await panel_client.get(TRY)).json()["configured"] is False


async def test_a_long_paste_is_cut_as_in_qq_and_one_beyond_the_panels_limit_refused(
    plugin, panel_client
) -> None:
    from nonebot_plugin_aimemory.onebot.pastes import MAX_PASTE_CHARS, omission_note

    plugin.llm.script(text("好长"))
    answer = await say(panel_client, PRIVATE, "长" * 50_000)
    assert answer["cut_chars"] == 50_000 - MAX_PASTE_CHARS
    assert omission_note(50_000 - MAX_PASTE_CHARS) in plugin.llm.last_messages()[-1]["content"]

    huge = await panel_client.post(
        f"{TRY}/{PRIVATE}/messages", json={"speaker": XIAOMING, "text": "长" * 100_000}
    )
    assert huge.status_code == 413


async def test_messages_sent_at_once_are_all_answered_in_order(plugin, panel_client) -> None:
    gate = threading.Event()
    plugin.llm.script(held(gate, text("先回答小明")), text("再回答小红"))
    first = asyncio.create_task(say(panel_client, GROUP, "第一句", at=["bot"]))
    await wait_until(lambda: bool(plugin.llm.chat_requests))
    # A second tab: two more messages of another member while the first is answered.
    second = asyncio.create_task(say(panel_client, GROUP, "第二句", XIAOHONG, at=["bot"]))
    await wait_until(lambda: waiting_messages(plugin, XIAOHONG) == 1)
    third = asyncio.create_task(say(panel_client, GROUP, "第三句", XIAOHONG, at=["bot"]))
    await wait_until(lambda: waiting_messages(plugin, XIAOHONG) == 2)
    gate.set()

    answers = await asyncio.gather(first, second, third)

    assert [a["messages"] for a in answers] == [["先回答小明"], [], ["再回答小红"]]
    assert "第二句" in model_saw(plugin)
    assert "第三句" in model_saw(plugin)


async def test_real_chats_are_not_reached_through_the_try_page(panel_client) -> None:
    for chat in ("g:111", f"u:{XIAOMING}", f"{GROUP}%23猫娘", "f:10001"):
        response = await panel_client.post(
            f"{TRY}/{chat}/messages", json={"speaker": XIAOMING, "text": "你好"}
        )
        assert response.status_code == 404, chat
    assert (await panel_client.get(f"{TRY}/g:abc/history")).status_code == 400
    wrong_speaker = await panel_client.post(
        f"{TRY}/f:{XIAOHONG}/messages", json={"speaker": XIAOMING, "text": "你好"}
    )
    assert wrong_speaker.status_code == 400


async def test_test_chats_are_listed_and_counted_as_tests_never_in_a_real_chats_quota(
    plugin, panel_client
) -> None:
    await plugin.restart(aimemory_daily_tokens_per_chat=1)
    plugin.llm.script(text("测试回答"), text("真实回答"))
    await say(panel_client, PRIVATE, "你好")

    bot = RecordingBot()
    await bot.receive(group_message("在吗", group_id=111, to_me=True))

    assert bot.sent_texts == ["真实回答"]  # the test chat's tokens are not g:111's
    rows = {row["scope"]: row for row in (await panel_client.get(f"{BASE}/api/chats")).json()}
    assert rows[PRIVATE]["test"] is True
    assert rows[PRIVATE]["name"] == "小明（私聊）"
    assert rows[PRIVATE]["tokens_today"] > 0
    assert rows["g:111"]["test"] is False


async def test_clearing_a_test_chat_forgets_it_for_good_but_keeps_its_usage(
    plugin, panel_client
) -> None:
    save = tool_calls(("memory_save", {"content": "小明喜欢爬山"}))
    plugin.llm.script(save, text("记住啦"), save, text("又记住啦"))
    await say(panel_client, PRIVATE, "记住我喜欢爬山")
    memories = f"{BASE}/api/chats/{PRIVATE}/memories"
    (memory,) = (await panel_client.get(memories)).json()
    await panel_client.delete(f"{memories}/{memory['id']}")  # a tombstone is left

    cleared = await panel_client.post(f"{TRY}/{PRIVATE}/clear")

    assert cleared.status_code == 200, cleared.text
    assert (await panel_client.get(f"{TRY}/{PRIVATE}/history")).json() == []
    assert (await panel_client.get(f"{BASE}/api/chats/{PRIVATE}/tombstones")).json() == []
    assert plugin.runtime.usage.today_total(PRIVATE) > 0
    again = await say(panel_client, PRIVATE, "记住我喜欢爬山")
    assert again["details"]["tools"][0]["result"].startswith("已保存记忆 #")
    # The window started over: the request holds only the new turn's message.
    assert [m["role"] for m in plugin.llm.last_messages()] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]


async def test_a_page_gone_in_the_middle_of_an_answer_does_not_hold_up_the_chat(
    plugin, panel_client
) -> None:
    gate = threading.Event()
    plugin.llm.script(held(gate, text("没人看了")), text("下一句"))
    gone = asyncio.create_task(say(panel_client, PRIVATE, "第一句"))
    await wait_until(lambda: bool(plugin.llm.chat_requests))
    gone.cancel()
    gate.set()

    answer = await asyncio.wait_for(say(panel_client, PRIVATE, "第二句"), 10)

    assert answer["messages"] == ["下一句"]


async def test_a_restart_in_the_middle_of_an_answer_keeps_the_message_for_the_next(
    plugin, panel_client, monkeypatch
) -> None:
    import nonebot_plugin_aimemory.runtime as runtime_module

    monkeypatch.setattr(runtime_module, "SHUTDOWN_GRACE_SECONDS", 0.2)
    gate = threading.Event()
    plugin.llm.script(held(gate, text("来不及了")))
    in_flight = asyncio.create_task(say(panel_client, PRIVATE, "重启前的话"))
    await wait_until(lambda: bool(plugin.llm.chat_requests))

    await plugin.restart()
    gate.set()
    assert (await in_flight)["messages"] == []
    plugin.llm.script(text("我回来了"))
    answer = await say(panel_client, PRIVATE, "还在吗")

    assert answer["messages"] == ["我回来了"]
    assert "重启前的话" in model_saw(plugin)

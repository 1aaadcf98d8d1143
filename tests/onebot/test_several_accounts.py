"""Several QQ accounts on one bot, driven as NapCat or Lagrange running two accounts drive
it: two reverse WebSockets into one NoneBot, each delivering the group's messages as its
own account received them (with its own message ids, or the same ones)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from nonebot.adapters.onebot.v11 import GroupMessageEvent, Message, MessageSegment
from nonebug import App

from tests.conftest import ACCESS_TOKEN, NICKNAME
from tests.fakes.events import SELF_ID, group_message, private_message
from tests.fakes.harness import PluginHarness
from tests.fakes.onebot_client import ApiCall, OneBotClient, connect_onebot, connect_onebots
from tests.fakes.openai_server import text, tool_calls

HOME = SELF_ID  # the first account (42): the one a single-account install ran with
SECOND = 43
GROUP = 777


def at(account: int, said: str) -> Message:
    return Message([MessageSegment.at(account), MessageSegment.text(f" {said}")])


async def both_receive(
    accounts: tuple[OneBotClient, ...], event: GroupMessageEvent, *, same_ids: bool = False
) -> None:
    """Every account receives the group message, each with its own message id unless
    `same_ids` (implementations number messages per account; some share them)."""
    for offset, account in enumerate(accounts):
        copy = event.model_copy(deep=True)
        if not same_ids:
            copy.message_id = event.message_id + 100_000 * offset
        await account.send_event(copy)


async def replies(
    accounts: tuple[OneBotClient, ...], expected: int = 0, timeout: float = 10.0
) -> dict[int, list[str]]:
    """What each account sent: once `expected` messages in all went out (the first turn
    loads the tokenizer), and a moment more, for any that should not have."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    sent: dict[int, list[str]] = {account.self_id: [] for account in accounts}
    while True:
        for account in accounts:
            sent[account.self_id] += [sent_text(call) for call in account.sent_so_far()]
        if sum(map(len, sent.values())) >= expected or loop.time() > deadline:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.4)
    for account in accounts:
        sent[account.self_id] += [sent_text(call) for call in account.sent_so_far()]
    return sent


def sent_text(call: ApiCall) -> str:
    return "".join(
        segment["data"].get("text", "")
        for segment in call.params["message"]
        if segment["type"] == "text"
    )


async def chat_log(plugin: PluginHarness) -> list[tuple[Any, ...]]:
    await plugin.runtime.chat_log.writer.flush()
    return await plugin.runtime.database.read(
        "SELECT session_key, role, speaker_id, text FROM chat_log ORDER BY id"
    )


@pytest.fixture
async def two(app: App, plugin: PluginHarness):
    async with connect_onebots(app, access_token=ACCESS_TOKEN, self_ids=(HOME, SECOND)) as accounts:
        yield accounts


async def test_a_group_message_is_answered_by_the_account_it_names(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    plugin.llm.script(text("我是第二个"))
    await both_receive(two, group_message(at(SECOND, "你好"), group_id=GROUP))

    assert await replies(two, 1) == {HOME: [], SECOND: ["我是第二个"]}


async def test_a_reply_to_one_accounts_message_is_answered_by_it(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    for account in two:  # each implementation reports who sent the quoted message
        account.quoted_senders[5555] = SECOND
    plugin.llm.script(text("对，是我说的"))
    quoting = Message([MessageSegment.reply(5555), MessageSegment.text("你刚才说什么")])
    await both_receive(two, group_message(quoting, group_id=GROUP))

    assert await replies(two, 1) == {HOME: [], SECOND: ["对，是我说的"]}


async def test_each_account_keeps_its_own_window(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    plugin.llm.script(text("好的一"), text("好的二"))
    await both_receive(two, group_message(at(HOME, "我叫阿强"), group_id=GROUP))
    await replies(two, 1)
    await both_receive(two, group_message(at(SECOND, "我叫什么"), group_id=GROUP))
    await replies(two, 1)

    from nonebot_plugin_aimemory import prompts

    *window, asked = plugin.llm.chat_requests[-1]["messages"]
    said = " ".join(str(message.get("content")) for message in window)
    assert "我叫阿强" not in said  # the other account's window
    # the group's chat log is one for both accounts: the line may come back only as a
    # recalled, quoted line before the question (chatlog/recall.py), never as the window
    recalled, _, question = str(asked["content"]).rpartition(prompts.MEMORY_INJECTION_FOOTER)
    assert question.strip().endswith("我叫什么")
    assert "我叫阿强" not in question
    if "我叫阿强" in recalled:
        assert prompts.CHAT_LOG_RECALL_OPENING in recalled
    windows = await plugin.runtime.database.read("SELECT key FROM sessions ORDER BY key")
    assert [key for (key,) in windows] == [f"g:{GROUP}", f"g:{GROUP}@{SECOND}"]


@pytest.mark.parametrize("same_ids", [False, True])
async def test_a_message_both_accounts_receive_is_logged_once(
    plugin: PluginHarness, two: tuple[OneBotClient, ...], same_ids: bool
) -> None:
    await plugin.restart(aimemory_chat_log_ambient=True)
    plugin.llm.script(text("收到"))
    await both_receive(two, group_message("今天下雨了", group_id=GROUP), same_ids=same_ids)
    await both_receive(two, group_message(at(HOME, "带伞了吗"), group_id=GROUP), same_ids=same_ids)
    await replies(two, 1)

    assert await chat_log(plugin) == [
        (f"g:{GROUP}", "user", "2001", "今天下雨了"),
        (f"g:{GROUP}", "user", "2001", "带伞了吗"),
        (f"g:{GROUP}", "assistant", str(HOME), "收到"),
    ]


async def test_the_same_words_said_twice_are_two_messages(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    await plugin.restart(aimemory_chat_log_ambient=True)
    for _ in range(2):
        await both_receive(two, group_message("哈哈哈", group_id=GROUP))
    await asyncio.sleep(0.2)

    rows = await chat_log(plugin)
    assert [row[3] for row in rows] == ["哈哈哈", "哈哈哈"]


async def test_a_copy_five_seconds_late_is_still_the_same_message(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    await plugin.restart(aimemory_chat_log_ambient=True)
    home, second = two
    event = group_message("晚到的消息", group_id=GROUP)
    await home.send_event(event)
    await asyncio.sleep(0.3)
    late = event.model_copy(deep=True)
    late.message_id += 7
    late.time += 5  # the implementation's own clock, as late as its delivery
    await second.send_event(late)
    await asyncio.sleep(0.3)

    assert [row[3] for row in await chat_log(plugin)] == ["晚到的消息"]


async def test_the_shared_nickname_is_answered_by_the_lowest_account_only(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    plugin.llm.script(text("我来回答"), text("多余的回答"))
    # The lower account is known to be in the group once it has received a message there.
    await both_receive(two, group_message("大家好", group_id=GROUP))
    await both_receive(two, group_message(f"{NICKNAME} 在吗", group_id=GROUP))

    assert await replies(two, 1) == {HOME: ["我来回答"], SECOND: []}
    assert plugin.llm.pending == 1


async def test_a_nickname_call_only_the_lower_account_received_is_answered_at_once(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    from nonebot_plugin_aimemory.conversation.copies import LOWER_ACCOUNT_WAIT_SECONDS

    home, _ = two
    plugin.llm.script(text("先热个身"), text("我在"))
    await both_receive(two, group_message(at(HOME, "你好"), group_id=GROUP))  # both are here
    await replies(two, 1)  # (and the first turn has loaded the tokenizer)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await home.send_event(group_message(f"{NICKNAME} 在吗", group_id=GROUP))

    assert sent_text(await home.next_send()) == "我在"
    assert loop.time() - started < LOWER_ACCOUNT_WAIT_SECONDS
    assert await replies(two) == {HOME: [], SECOND: []}


async def test_a_nickname_call_only_the_higher_account_received_is_answered_after_a_wait(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    from nonebot_plugin_aimemory.conversation.copies import LOWER_ACCOUNT_WAIT_SECONDS

    _, second = two
    plugin.llm.script(text("我在"), text("多余的回答"))
    await both_receive(two, group_message("大家好", group_id=GROUP))  # both are here
    loop = asyncio.get_running_loop()
    started = loop.time()
    await second.send_event(group_message(f"{NICKNAME} 在吗", group_id=GROUP))

    assert await replies(two, 1) == {HOME: [], SECOND: ["我在"]}
    assert loop.time() - started >= LOWER_ACCOUNT_WAIT_SECONDS
    assert plugin.llm.pending == 1


async def test_a_nickname_call_the_lower_account_receives_during_the_wait_is_its_own(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    home, second = two
    plugin.llm.script(text("我来回答"), text("多余的回答"))
    await both_receive(two, group_message("大家好", group_id=GROUP))
    call = group_message(f"{NICKNAME} 在吗", group_id=GROUP)
    await second.send_event(call)
    await asyncio.sleep(0.5)  # the lower account's copy comes late, within the wait
    late = call.model_copy(deep=True)
    late.message_id += 100_000
    await home.send_event(late)

    assert await replies(two, 1) == {HOME: ["我来回答"], SECOND: []}
    assert plugin.llm.pending == 1


async def test_a_command_naming_no_account_is_answered_once(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    await both_receive(two, group_message("~对话 状态", group_id=GROUP))

    sent = await replies(two, 1)
    assert len(sent[HOME]) == 1
    assert sent[SECOND] == []
    assert f"账号：{HOME}" in sent[HOME][0]


async def test_a_command_naming_an_account_is_answered_by_it(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    await both_receive(two, group_message(at(SECOND, "~对话 状态"), group_id=GROUP))

    sent = await replies(two, 1)
    assert sent[HOME] == []
    assert len(sent[SECOND]) == 1
    assert f"账号：{SECOND}" in sent[SECOND][0]


async def test_no_account_answers_another(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    await plugin.restart(aimemory_chat_log_ambient=True, aimemory_group_autoclear_after=3)
    plugin.llm.script(text("在呢，有什么事"))
    await both_receive(two, group_message(at(HOME, "在吗"), group_id=GROUP))
    assert (await replies(two, 1))[HOME] == ["在呢，有什么事"]
    # The second account receives the first one's reply as a group message; even one that
    # starts with the shared nickname, and says it many times, gets no answer.
    for said in (f"{NICKNAME} 在呢，有什么事", *(["刷屏"] * 5)):
        await two[1].send_event(
            group_message(said, group_id=GROUP, user_id=HOME, card="小忆", nickname="小忆")
        )

    assert await replies(two) == {HOME: [], SECOND: []}
    assert plugin.llm.pending == 0
    # The person's "@first 在吗" counts for the second account's window; the bot's lines not.
    assert plugin.runtime.autoclear.counts.get(f"g:{GROUP}@{SECOND}", 0) == 1
    speakers = {(row[1], row[2]) for row in await chat_log(plugin)}
    assert speakers == {("user", "2001"), ("assistant", str(HOME))}


async def test_a_bot_that_is_not_connected_here_is_an_ordinary_member(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    await plugin.restart(aimemory_chat_log_ambient=True)
    await both_receive(two, group_message("我是别人家的机器人", group_id=GROUP, user_id=88888))
    await asyncio.sleep(0.2)

    assert [(row[1], row[2]) for row in await chat_log(plugin)] == [("user", "88888")]


async def save_then_search(plugin: PluginHarness, two: tuple[OneBotClient, ...]) -> str:
    """The home account saves a fact of the group; then the second account is asked and
    searches: what the search returned to the second account's model."""
    plugin.llm.script(
        tool_calls(("memory_save", {"content": "本群周五晚上聚餐"})),
        text("记住了"),
        tool_calls(("memory_search", {"query": "聚餐"})),
        text("回答"),
    )
    await both_receive(two, group_message(at(HOME, "记一下周五聚餐"), group_id=GROUP))
    await replies(two, 1)
    await both_receive(two, group_message(at(SECOND, "什么时候聚餐"), group_id=GROUP))
    await replies(two, 1)
    search_result = plugin.llm.chat_requests[-1]["messages"][-1]
    assert search_result["role"] == "tool"
    return str(search_result["content"])


async def test_memories_are_shared_by_the_accounts(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    assert "本群周五晚上聚餐" in await save_then_search(plugin, two)


async def test_the_chat_is_reviewed_once_whichever_accounts_answered(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    plugin.llm.script(text("一"), text("二"))
    await both_receive(two, group_message(at(HOME, "周末去哪"), group_id=GROUP))
    await replies(two, 1)
    await both_receive(two, group_message(at(SECOND, "去爬山吧"), group_id=GROUP))
    await replies(two, 1)
    await plugin.runtime.chat_log.writer.flush()

    pending = await plugin.runtime.database.read(
        "SELECT session_key FROM review_state WHERE pending > 0"
    )
    assert pending == [(f"g:{GROUP}",)]


async def test_memories_stay_with_their_account_when_not_shared(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    await plugin.restart(aimemory_accounts_share_memory=False)

    assert "本群周五晚上聚餐" not in await save_then_search(plugin, two)
    scopes = await plugin.runtime.database.read("SELECT DISTINCT scope FROM memories")
    assert scopes == [(f"g:{GROUP}",)]


async def test_a_private_chat_is_between_one_person_and_one_account(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    plugin.llm.script(text("你好呀"))
    await two[1].send_event(private_message("你好", user_id=3001))

    assert await replies(two, 1) == {HOME: [], SECOND: ["你好呀"]}
    windows = await plugin.runtime.database.read("SELECT key FROM sessions")
    assert windows == [(f"f:3001@{SECOND}",)]


async def test_an_account_the_plugin_does_not_serve_stays_silent(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    # Only the second account is the plugin's: it answers the shared nickname, although the
    # other one is lower.
    await plugin.restart(aimemory_accounts=str(SECOND))
    plugin.llm.script(text("我在"))
    await both_receive(two, group_message("大家好", group_id=GROUP))
    await both_receive(two, group_message(f"{NICKNAME} 在吗", group_id=GROUP))
    await both_receive(two, group_message(at(HOME, "你呢"), group_id=GROUP))

    assert await replies(two, 1) == {HOME: [], SECOND: ["我在"]}


async def test_an_event_naming_an_account_that_is_not_its_connection_is_ignored(
    plugin: PluginHarness, two: tuple[OneBotClient, ...], plugin_log
) -> None:
    await two[1].send_event(group_message(at(99999, "你好"), group_id=GROUP), self_id=99999)

    assert await replies(two) == {HOME: [], SECOND: []}
    assert any("account 99999" in record.getMessage() for record in plugin_log.records)


async def test_an_account_that_disconnects_mid_turn_loses_only_its_reply(
    plugin: PluginHarness, two: tuple[OneBotClient, ...], plugin_log
) -> None:
    from tests.fakes.openai_server import delay

    home, second = two
    plugin.llm.script(delay(1.0, text("这句发不出去了")), text("我还在"))
    await second.send_event(group_message(at(SECOND, "讲个故事"), group_id=GROUP))
    await asyncio.sleep(0.3)
    await second.hang_up()  # before its answer comes back
    await asyncio.sleep(1.2)
    await home.send_event(group_message(at(HOME, "你在吗"), group_id=GROUP))

    assert await replies((home,), 1) == {HOME: ["我还在"]}
    assert any(
        f"account {SECOND} could not send its reply" in record.getMessage()
        for record in plugin_log.records
    )
    # Its window keeps the turn.
    window = await plugin.runtime.history.load(f"g:{GROUP}@{SECOND}")
    assert window[-1].text == "这句发不出去了"


async def test_the_first_account_connected_is_home_when_the_plugin_starts_after_both(
    plugin: PluginHarness, two: tuple[OneBotClient, ...]
) -> None:
    # A database with no home account yet, and a plugin started (a deferred start, a
    # restart) after both accounts connected: it never hears their connections.
    from tests.chatlog.helpers import eventually

    async def home_recorded() -> bool:  # (the running plugin heard them)
        return plugin.runtime.inbound.accounts.home is not None

    await eventually(home_recorded)
    await plugin.runtime.database.write_one("DELETE FROM plugin_state")
    await plugin.restart()
    plugin.llm.script(text("我在"))
    await two[1].send_event(group_message(at(SECOND, "你好"), group_id=GROUP))
    await replies(two, 1)

    windows = await plugin.runtime.database.read("SELECT key FROM sessions")
    assert windows == [(f"g:{GROUP}@{SECOND}",)]


async def test_an_upgraded_single_account_install_keeps_everything_for_that_account(
    app: App, plugin: PluginHarness
) -> None:
    # A database that ran with one account before accounts were told apart.
    plugin.llm.script(tool_calls(("memory_save", {"content": "群主叫老王"})), text("记下了"))
    async with connect_onebot(app, access_token=ACCESS_TOKEN, self_id=HOME) as home:
        await home.send_event(group_message(at(HOME, "记住群主是老王"), group_id=GROUP))
        await home.next_send()
    await plugin.runtime.database.write_one("DELETE FROM plugin_state")
    await plugin.restart()

    plugin.llm.script(text("记得"), tool_calls(("memory_search", {"query": "群主"})), text("老王"))
    async with connect_onebots(app, access_token=ACCESS_TOKEN, self_ids=(HOME, SECOND)) as two:
        await both_receive(two, group_message(at(HOME, "还记得吗"), group_id=GROUP))
        await replies(two, 1)
        home_request = plugin.llm.chat_requests[-1]["messages"]
        await both_receive(two, group_message(at(SECOND, "群主是谁"), group_id=GROUP))
        await replies(two, 1)
        second_request = plugin.llm.chat_requests[-1]["messages"]

    # The home account's window goes on where it was; the new account's starts empty (the
    # chat's log is shared: the line may be recalled before the question, not in a window).
    home_window = [m for m in home_request if "还记得吗" not in str(m.get("content"))]
    second_window = [m for m in second_request if "群主是谁" not in str(m.get("content"))]
    assert "记住群主是老王" in " ".join(str(m.get("content")) for m in home_window)
    assert "记住群主是老王" not in " ".join(str(m.get("content")) for m in second_window)
    # And the memories are the group's, shared.
    assert "群主叫老王" in second_request[-1]["content"]

"""Quotes of the bot's own messages: the plugin records which chat each message it sends
went to (bot account, message id, chat, time), and shows a quote of a bot message only in
that chat; one it cannot place (sent before records were kept, a send answered without an
id, forgotten by retention) is `[引用 无法显示]`. Some implementations report no peer for
the bot's private messages (or nothing of the chat at all), so what they say cannot place
them."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from nonebot.adapters.onebot.v11 import Message, MessageSegment
from nonebug import App

from tests.conftest import ACCESS_TOKEN, SUPERUSER_ID
from tests.fakes.events import SELF_ID, group_message, private_message
from tests.fakes.harness import PluginHarness
from tests.fakes.onebot_client import connect_onebot
from tests.fakes.openai_server import FakeOpenAI, deepseek_no_balance, last_user_text, text
from tests.fakes.qq import QQBot, content, main_requests, stored_bodies, user_line
from tests.onebot.test_quotes import adapter_reply

HIDDEN = "[引用 无法显示]"
UNAVAILABLE = "[引用了一条无法获取的消息]"
GROUP = 111
OTHER_GROUP = 222
BOB = 3001
CAROL = 3002
CAROL_IN_GROUP = 2002
# Bob's private words, which the bot repeats in its private reply to him.
BOBS_SECRET = "我下周二要去医院复查"
BOTS_PRIVATE_REPLY = f"好的，记住了：{BOBS_SECRET}"
BOTS_GROUP_REPLY = "周五下午三点开会"
PRIVATE_SEND_IDS_FROM = 9000


class SendingQQ(QQBot):
    """A QQBot that keeps every message the bot sends for `get_msg` (the bot as its sender)
    the way the implementations of the finding report them: `reports="chat"` gives group
    messages their `group_id` and private ones `message_type: private` but no `target_id`;
    `reports="nothing"` gives neither a message type nor a group. `answer` shapes what a
    send answers (OneBot's `{"message_id": n}` by default)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent_ids: list[int] = []
        self.reports = "chat"
        self.answer: Callable[[int], Any] = lambda message_id: {"message_id": message_id}
        self._private_ids = itertools.count(PRIVATE_SEND_IDS_FROM)

    async def call_api(self, api: str, **data: Any) -> Any:
        answer = await super().call_api(api, **data)
        if api == "send_private_msg":  # RecordingBot answers it with nothing
            answer = {"message_id": next(self._private_ids)}
            data = {**data, "message_type": "private"}
        if api not in ("send_msg", "send_private_msg"):
            return answer
        message_id = int(answer["message_id"])
        self.sent_ids.append(message_id)
        self._keep(message_id, data)
        return self.answer(message_id)

    def _keep(self, message_id: int, data: dict[str, Any]) -> None:
        message = data["message"]
        said = message.extract_plain_text() if isinstance(message, Message) else str(message)
        self.store_message(message_id, user_id=SELF_ID, card="", said=said)
        stored = self.stored_messages[message_id]
        if self.reports == "nothing":
            del stored["message_type"]
        elif data.get("message_type") == "private":
            stored["message_type"] = "private"
        else:
            stored["group_id"] = data["group_id"]

    @property
    def last_sent_id(self) -> int:
        return self.sent_ids[-1]


@pytest.fixture
def qq() -> SendingQQ:
    return SendingQQ()


def quoting(message_id: int, said: str) -> Message:
    return content(MessageSegment.reply(message_id), said)


async def bot_replies_privately_to_bob(qq: SendingQQ, llm: FakeOpenAI) -> int:
    """Bob tells the bot something privately; the bot's reply repeats it. Its id."""
    llm.script(text(BOTS_PRIVATE_REPLY))
    await qq.receive(private_message(f"帮我记一下，{BOBS_SECRET}", user_id=BOB))
    assert qq.sent_texts[-1] == BOTS_PRIVATE_REPLY
    return qq.last_sent_id


async def bot_replies_in_group(qq: SendingQQ, llm: FakeOpenAI, group_id: int = GROUP) -> int:
    """Someone asks the bot in `group_id`; the id of its reply there."""
    llm.script(text(BOTS_GROUP_REPLY))
    await qq.receive(group_message("什么时候开会", group_id=group_id, to_me=True))
    assert qq.sent_texts[-1] == BOTS_GROUP_REPLY
    return qq.last_sent_id


def last_request_text(llm: FakeOpenAI) -> str:
    """The whole last request to the main model, as the model service received it."""
    return json.dumps(main_requests(llm)[-1], ensure_ascii=False)


async def assert_group_never_saw(plugin: PluginHarness, group_id: int, said: str) -> None:
    """`said` is in neither the group's stored window nor its chat log."""
    assert said not in json.dumps(await stored_bodies(plugin, f"g:{group_id}"), ensure_ascii=False)
    await plugin.runtime.chat_log.flush()
    rows = await plugin.runtime.database.read(
        "SELECT text FROM chat_log WHERE session_key = ?", (f"g:{group_id}",)
    )
    assert all(said not in row_text for (row_text,) in rows)


@pytest.mark.parametrize("reports", ["chat", "nothing"])
async def test_the_bots_private_reply_quoted_in_a_group_stays_out_of_the_groups_request(
    plugin, qq: SendingQQ, reports: str
) -> None:
    qq.reports = reports
    private_reply = await bot_replies_privately_to_bob(qq, plugin.llm)

    await qq.receive(
        group_message(
            quoting(private_reply, "这是什么意思"),
            group_id=GROUP,
            user_id=CAROL_IN_GROUP,
            to_me=True,
        )
    )

    assert qq.sent_texts[-1] == "好的"
    assert f"{HIDDEN}\n这是什么意思" in user_line(plugin.llm)
    assert BOBS_SECRET not in last_request_text(plugin.llm)
    await assert_group_never_saw(plugin, GROUP, BOBS_SECRET)


async def test_the_bots_private_reply_to_bob_quoted_in_carols_private_chat_is_hidden(
    plugin, qq: SendingQQ
) -> None:
    # The implementation says "a private message of the bot" and nothing of whom to.
    private_reply = await bot_replies_privately_to_bob(qq, plugin.llm)

    await qq.receive(private_message(quoting(private_reply, "这是啥"), user_id=CAROL))

    assert f"{HIDDEN}\n这是啥" in user_line(plugin.llm)
    assert BOBS_SECRET not in last_request_text(plugin.llm)


@pytest.mark.parametrize("reports", ["chat", "nothing"])
async def test_the_bots_reply_in_this_group_quoted_here_is_shown(
    plugin, qq: SendingQQ, reports: str
) -> None:
    qq.reports = reports
    group_reply = await bot_replies_in_group(qq, plugin.llm)

    await qq.receive(
        group_message(quoting(group_reply, "几点？"), user_id=CAROL_IN_GROUP, to_me=True)
    )

    assert f"[引用 机器人：{BOTS_GROUP_REPLY}]\n几点？" in user_line(plugin.llm)


async def test_the_bots_private_reply_quoted_by_the_same_friend_is_shown(
    plugin, qq: SendingQQ
) -> None:
    private_reply = await bot_replies_privately_to_bob(qq, plugin.llm)

    await qq.receive(private_message(quoting(private_reply, "对，就是这个"), user_id=BOB))

    assert f"[引用 机器人：{BOTS_PRIVATE_REPLY}]\n对，就是这个" in user_line(plugin.llm)


async def test_the_bots_reply_in_another_group_is_hidden_when_no_group_is_reported(
    plugin, qq: SendingQQ
) -> None:
    qq.reports = "nothing"  # as Lagrange: no group_id, so only the record can tell
    other_groups_reply = await bot_replies_in_group(qq, plugin.llm, group_id=OTHER_GROUP)

    await qq.receive(group_message(quoting(other_groups_reply, "嗯？"), group_id=GROUP, to_me=True))

    assert f"{HIDDEN}\n嗯？" in user_line(plugin.llm)
    assert BOTS_GROUP_REPLY not in last_request_text(plugin.llm)


async def test_a_notice_to_the_superusers_is_recorded_as_sent_to_their_private_chat(
    plugin, qq: SendingQQ
) -> None:
    plugin.llm.responder = lambda body: deepseek_no_balance()

    await qq.receive(private_message("在吗", user_id=BOB))

    notice = next(call for call in qq.calls if call.api == "send_private_msg")
    assert str(notice.data["user_id"]) == SUPERUSER_ID
    sent = plugin.runtime.outbound.sent
    assert await sent.chat_of(str(SELF_ID), str(PRIVATE_SEND_IDS_FROM)) == f"f:{SUPERUSER_ID}"


async def test_records_name_the_sending_account_and_the_chat(plugin, qq: SendingQQ) -> None:
    group_reply = await bot_replies_in_group(qq, plugin.llm)
    private_reply = await bot_replies_privately_to_bob(qq, plugin.llm)

    rows = await plugin.runtime.database.read(
        "SELECT account, message_id, chat_key FROM sent_messages ORDER BY sent_at"
    )

    assert rows == [
        (str(SELF_ID), str(group_reply), f"g:{GROUP}"),
        (str(SELF_ID), str(private_reply), f"f:{BOB}"),
    ]


async def test_every_message_of_a_split_reply_is_recorded(plugin, qq: SendingQQ) -> None:
    await plugin.restart(aimemory_reply_max_chars=100)
    plugin.llm.script(text("周五开会。" * 12 + "\n\n" + "在三楼会议室。" * 9))

    await qq.receive(group_message("会议安排？", to_me=True))

    assert len(qq.sent_ids) == 2
    sent = plugin.runtime.outbound.sent
    for message_id in qq.sent_ids:
        assert await sent.chat_of(str(SELF_ID), str(message_id)) == f"g:{GROUP}"


@pytest.mark.parametrize("where", ["group", "private"])
async def test_a_bot_message_sent_before_records_were_kept_is_hidden(
    plugin, qq: SendingQQ, where: str
) -> None:
    # What an older release sent: the implementation places it right here, the plugin
    # has no record of it.
    qq.store_message(55, user_id=SELF_ID, card="", said="很久以前的回答")
    if where == "group":
        qq.stored_messages[55]["group_id"] = GROUP
        event = group_message(quoting(55, "还记得吗"), group_id=GROUP, to_me=True)
    else:
        qq.stored_messages[55].update(message_type="private", target_id=BOB)
        event = private_message(quoting(55, "还记得吗"), user_id=BOB)

    await qq.receive(event)

    assert f"{HIDDEN}\n还记得吗" in user_line(plugin.llm)
    assert "很久以前的回答" not in last_request_text(plugin.llm)
    assert qq.sent_texts == ["好的"]


async def test_a_recorded_bot_message_get_msg_cannot_fetch_is_unavailable(
    plugin, qq: SendingQQ
) -> None:
    group_reply = await bot_replies_in_group(qq, plugin.llm)
    del qq.stored_messages[group_reply]  # the implementation lost it (a restart of NapCat)

    await qq.receive(group_message(quoting(group_reply, "刚才说啥"), to_me=True))

    assert f"{UNAVAILABLE}\n刚才说啥" in user_line(plugin.llm)
    assert qq.sent_texts[-1] == "好的"


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(lambda message_id: {"message_id": str(message_id)}, id="id-as-text"),
        pytest.param(lambda message_id: message_id, id="bare-id"),
        pytest.param(lambda message_id: f" {message_id}", id="bare-text-id"),
    ],
)
async def test_a_send_answer_of_any_shape_is_recorded(
    plugin, qq: SendingQQ, answer: Callable[[int], Any]
) -> None:
    qq.answer = answer
    group_reply = await bot_replies_in_group(qq, plugin.llm)

    await qq.receive(group_message(quoting(group_reply, "几点？"), to_me=True))

    assert f"[引用 机器人：{BOTS_GROUP_REPLY}]" in user_line(plugin.llm)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(lambda message_id: None, id="nothing"),
        pytest.param(lambda message_id: {}, id="empty-dict"),
        pytest.param(lambda message_id: {"message_id": None}, id="null-id"),
        pytest.param(lambda message_id: {"message_id": ""}, id="empty-id"),
        pytest.param(lambda message_id: True, id="not-an-id"),
    ],
)
async def test_a_send_answered_without_an_id_leaves_its_quotes_hidden(
    plugin, qq: SendingQQ, answer: Callable[[int], Any]
) -> None:
    qq.answer = answer
    group_reply = await bot_replies_in_group(qq, plugin.llm)

    await qq.receive(group_message(quoting(group_reply, "几点？"), to_me=True))

    assert qq.sent_texts == [BOTS_GROUP_REPLY, "好的"]
    assert f"{HIDDEN}\n几点？" in user_line(plugin.llm)
    assert await plugin.runtime.database.read("SELECT * FROM sent_messages") == []


async def test_an_adapter_filled_reply_of_the_bot_is_placed_by_the_record(
    plugin, qq: SendingQQ
) -> None:
    # The adapter's own get_msg answer: the implementation calls Bob's private reply a
    # group message of no group in particular.
    private_reply = await bot_replies_privately_to_bob(qq, plugin.llm)
    group_reply = await bot_replies_in_group(qq, plugin.llm)
    hidden = group_message("看这个", group_id=GROUP, to_me=True)
    hidden.reply = adapter_reply(
        BOTS_PRIVATE_REPLY, message_id=private_reply, sender={"user_id": SELF_ID}
    )
    shown = group_message("还有这个", group_id=GROUP, to_me=True)
    shown.reply = adapter_reply(
        BOTS_GROUP_REPLY, message_id=group_reply, sender={"user_id": SELF_ID}
    )

    await qq.receive(hidden)
    hidden_line, hidden_request = user_line(plugin.llm), last_request_text(plugin.llm)
    await qq.receive(shown)

    assert f"{HIDDEN}\n看这个" in hidden_line
    assert BOBS_SECRET not in hidden_request
    assert f"[引用 机器人：{BOTS_GROUP_REPLY}]\n还有这个" in user_line(plugin.llm)


async def test_records_outlive_a_restart(plugin, qq: SendingQQ) -> None:
    group_reply = await bot_replies_in_group(qq, plugin.llm)
    private_reply = await bot_replies_privately_to_bob(qq, plugin.llm)

    await plugin.restart()
    await qq.receive(group_message(quoting(group_reply, "几点？"), to_me=True))
    group_line = user_line(plugin.llm)
    await qq.receive(group_message(quoting(private_reply, "啥？"), to_me=True))

    assert f"[引用 机器人：{BOTS_GROUP_REPLY}]" in group_line
    assert f"{HIDDEN}\n啥？" in user_line(plugin.llm)


async def test_the_chat_logs_retention_forgets_old_records_only(plugin, qq: SendingQQ) -> None:
    from nonebot_plugin_aimemory.store.sent_messages import SentMessage
    from nonebot_plugin_aimemory.store.times import utc_text

    await plugin.restart(aimemory_chat_log_keep_days=7)
    now = datetime.now(timezone.utc)
    sent = plugin.runtime.outbound.sent
    eight_days_ago = utc_text(now - timedelta(days=8))
    await sent.record([SentMessage(str(SELF_ID), "77", f"g:{GROUP}", eight_days_ago)])
    qq.store_message(77, user_id=SELF_ID, card="", said="八天前的回答")
    qq.stored_messages[77]["group_id"] = GROUP
    recent_reply = await bot_replies_in_group(qq, plugin.llm)

    await plugin.runtime.chat_log.writer.cleanup(now=now)
    await qq.receive(group_message(quoting(77, "这条呢"), to_me=True))
    old_line = user_line(plugin.llm)
    await qq.receive(group_message(quoting(recent_reply, "那这条呢"), to_me=True))

    assert await sent.chat_of(str(SELF_ID), "77") is None
    assert f"{HIDDEN}\n这条呢" in old_line
    assert f"[引用 机器人：{BOTS_GROUP_REPLY}]\n那这条呢" in user_line(plugin.llm)


async def test_over_the_websocket_the_bots_reply_is_quoted_only_in_its_own_chat(
    app: App, plugin: PluginHarness
) -> None:
    # The fake implementation answers every get_msg with "a group message of the bot",
    # no group named: the record alone places the bot's replies.
    plugin.llm.script(text(BOTS_GROUP_REPLY), text(BOTS_PRIVATE_REPLY))
    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        asking = content(MessageSegment.at(SELF_ID), " 什么时候开会")
        await onebot.send_event(group_message(asking, group_id=GROUP))
        await onebot.next_send()
        await onebot.send_event(private_message(f"帮我记一下，{BOBS_SECRET}", user_id=BOB))
        await onebot.next_send()
        group_reply, private_reply = 9000, 9001
        await onebot.send_event(group_message(quoting(group_reply, "几点？"), group_id=GROUP))
        await onebot.next_send()
        shown = last_user_text(plugin.llm.last_messages())
        await onebot.send_event(group_message(quoting(private_reply, "啥？"), group_id=GROUP))
        await onebot.next_send()

    assert shown.endswith("：[引用 机器人：之前的消息]\n几点？")
    assert last_user_text(plugin.llm.last_messages()).endswith(f"：{HIDDEN}\n啥？")

"""The model check of a note a member's turn saves, after the turn (memory/shared_guard.py,
`aimemory_guard_check_after_turn`): on the chat's own local server the check waits for
the turn's end, so the turn's next request still finds its prompt in the server's one
slot; a note the check says steers is deleted then; a note changed meanwhile is left; a
command's save, a note the rules cannot read and a check of another server are read in
the turn as before; a check stopped with the bot leaves the note unshown until read."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.one_slot import OneSlotServer
from tests.fakes.openai_server import Reply, held, text, tool_calls
from tests.guard.test_model_check import THAI_ORDER, checker_requests, model_says_steering
from tests.guard.test_shown_check import PLAIN, PLANTED, QUESTION, is_check, last_turn_content
from tests.memory.helpers import saved_id, stored, wait_for

GROUP = 806
SCOPE = f"g:{GROUP}"


class SavingTurn:
    """The fake server: a member's turn saves `note` with a tool call and then says 好的;
    the checker answers `verdict` (once `gate` is set, if given). Records the kind of
    each request in order, and how many replies the bot had sent when the check came."""

    def __init__(self, note: str, verdict: str = "no", gate: threading.Event | None = None):
        self.note = note
        self.verdict = verdict
        self.gate = gate
        self.kinds: list[str] = []
        self.bot = RecordingBot()
        self.sent_when_checked: list[int] = []
        self.saving = True  # False: turns only say 好的

    def __call__(self, body: dict[str, Any]) -> Reply:
        if is_check(body):
            self.kinds.append("check")
            self.sent_when_checked.append(len(self.bot.sent_texts))
            answer = text(self.verdict)
            return held(self.gate, answer) if self.gate is not None else answer
        self.kinds.append("turn")
        if body["messages"][-1]["role"] == "tool" or not self.saving:
            return text("好的")
        return tool_calls(("memory_save", {"content": self.note}))

    async def says(self, line: str = "记一下") -> None:
        """A member addresses the bot."""
        await self.bot.receive(group_message(line, group_id=GROUP, to_me=True))


async def started(plugin, turn: SavingTurn, *, after_turn: bool = True, **settings) -> None:
    await plugin.restart(
        aimemory_guard_check=True, aimemory_guard_check_after_turn=after_turn, **settings
    )
    plugin.llm.responder = turn


async def turn_saves(plugin, turn: SavingTurn, **settings) -> str:
    """The member's turn saves the note; returns the tool result the model was shown."""
    await started(plugin, turn, **settings)
    return await turn_saves_again(plugin, turn)


async def turn_saves_again(plugin, turn: SavingTurn) -> str:
    """The member's next turn saves the note again; the tool result the model was shown."""
    await turn.says()
    messages = [body for body in plugin.llm.chat_requests if not is_check(body)][-1]["messages"]
    return next(m["content"] for m in reversed(messages) if m["role"] == "tool")


async def asked(turn: SavingTurn) -> bool:
    return "check" in turn.kinds


async def checked(plugin) -> None:
    await plugin.runtime.memory.service.guard.checked_after_turns()


async def test_a_note_saved_in_a_turn_is_checked_after_the_answer_goes_out(plugin) -> None:
    turn = SavingTurn(PLAIN)

    result = await turn_saves(plugin, turn)
    await checked(plugin)

    assert saved_id(result)
    assert turn.kinds == ["turn", "turn", "check"]
    assert turn.sent_when_checked == [1]  # the answer had gone out
    assert [record.content for record in await stored(plugin, SCOPE)] == [PLAIN]


async def test_without_it_the_check_comes_between_the_turns_requests(plugin) -> None:
    turn = SavingTurn(PLAIN)

    await turn_saves(plugin, turn, after_turn=False)

    assert turn.kinds == ["turn", "check", "turn"]
    assert turn.sent_when_checked == [0]


async def test_a_note_the_check_says_steers_is_deleted_after_the_turn(plugin, plugin_log) -> None:
    turn = SavingTurn(PLANTED, verdict="yes")

    result = await turn_saves(plugin, turn)
    await checked(plugin)

    assert saved_id(result)  # durable before the answer said so; the check comes after
    assert await stored(plugin, SCOPE) == []
    assert [record.content for record in await stored(plugin, SCOPE, deleted=True)] == [PLANTED]
    assert "refused a note for g:806 after the turn" in plugin_log.text
    # Saved again: refused at once by the verdict kept, without asking again.
    assert await turn_saves_again(plugin, turn) == model_says_steering()
    assert await stored(plugin, SCOPE) == []
    assert turn.kinds.count("check") == 1


async def test_a_note_changed_before_its_check_came_is_left(plugin) -> None:
    gate = threading.Event()
    turn = SavingTurn(PLANTED, verdict="yes", gate=gate)
    result = await turn_saves(plugin, turn)
    service = plugin.runtime.memory.service

    await service.update(SCOPE, saved_id(result), content=PLAIN)
    gate.set()
    await checked(plugin)

    assert [record.content for record in await stored(plugin, SCOPE)] == [PLAIN]


async def test_a_note_a_member_asked_to_keep_is_checked_after_the_answer(plugin) -> None:
    from nonebot_plugin_aimemory.memory.personal import personal_scope

    turn = SavingTurn(PLAIN)
    await started(plugin, turn)
    plugin.llm.script(text("好的，记住了"))  # the model says so without saving

    await turn.bot.receive(group_message("记住：我周末常去爬山", group_id=GROUP, to_me=True))
    await checked(plugin)

    # The plugin keeps the fact itself before the answer goes out; the check comes after.
    assert turn.kinds[-1] == "check"
    assert turn.sent_when_checked == [1]
    # About the speaker: in their personal memories, public (said in the group): shared.
    assert [record.content for record in await stored(plugin, personal_scope(SCOPE, "2001"))] == [
        "小明(2001)说：我周末常去爬山"
    ]


async def test_a_commands_save_is_checked_before_its_answer(plugin) -> None:
    turn = SavingTurn(PLAIN)
    await started(plugin, turn)

    await turn.bot.receive(group_message(f"~记忆 添加 {PLAIN}", group_id=GROUP, to_me=True))

    assert turn.kinds == ["check"]
    assert turn.sent_when_checked == [0]


async def test_a_note_the_rules_cannot_read_is_checked_in_the_turn(plugin) -> None:
    turn = SavingTurn(THAI_ORDER, verdict="yes")

    await turn_saves(plugin, turn)

    assert turn.kinds == ["turn", "check", "turn"]
    assert await stored(plugin, SCOPE) == []


async def test_a_check_stopped_with_the_bot_leaves_the_note_unshown_until_read(plugin) -> None:
    gate = threading.Event()
    turn = SavingTurn(PLANTED, verdict="yes", gate=gate)
    await turn_saves(plugin, turn)
    assert await wait_for(lambda: asked(turn))

    await plugin.stop()  # the check waiting for its answer is stopped
    gate.set()
    await started(plugin, turn)
    plugin.llm.responder = lambda body: text("yes" if is_check(body) else "好的")
    checked_before = len(checker_requests(plugin))
    await RecordingBot().receive(group_message(QUESTION, group_id=GROUP, to_me=True))

    assert [record.content for record in await stored(plugin, SCOPE)] == [PLANTED]
    assert PLANTED not in last_turn_content(plugin)
    # Read by the check after the restart, before it would have been shown.
    assert any(PLANTED in note for note in checker_requests(plugin)[checked_before:])


async def test_the_bot_stopping_lets_a_check_under_way_finish_for_a_moment(plugin) -> None:
    gate = threading.Event()
    turn = SavingTurn(PLANTED, verdict="yes", gate=gate)
    await turn_saves(plugin, turn)
    assert await wait_for(lambda: asked(turn))

    stopping = asyncio.ensure_future(plugin.stop())
    await asyncio.sleep(0.3)
    gate.set()  # the answer comes while the bot stops
    await stopping
    await started(plugin, turn)

    assert await stored(plugin, SCOPE) == []


async def test_a_note_whose_check_is_to_come_is_left_out_of_the_next_turn(plugin) -> None:
    gate = threading.Event()
    turn = SavingTurn(PLAIN, verdict="no", gate=gate)
    await turn_saves(plugin, turn)
    turn.saving = False

    await turn.says(QUESTION)  # the check has not answered: the note is not shown yet
    assert PLAIN not in last_turn_content(plugin)

    gate.set()
    await checked(plugin)
    await turn.says(QUESTION)
    assert PLAIN in last_turn_content(plugin)


async def test_a_note_checked_after_its_turn_is_not_checked_again_when_shown(plugin) -> None:
    turn = SavingTurn(PLAIN, verdict="no")
    await turn_saves(plugin, turn)
    await checked(plugin)
    turn.saving = False

    await turn.says(QUESTION)

    assert PLAIN in last_turn_content(plugin)
    assert turn.kinds.count("check") == 1


def main_reads(slot: OneSlotServer) -> list:
    """The requests of the member's turn (the tools offered)."""
    return [read for read in slot.reads if read.body.get("tools")]


@pytest.mark.parametrize("after_turn", [True, False], ids=["after the turn", "in the turn"])
async def test_the_turns_next_request_finds_its_prompt_in_a_one_slot_server(
    plugin, after_turn: bool
) -> None:
    turn = SavingTurn(PLAIN)
    slot = OneSlotServer(turn)
    await started(plugin, turn, after_turn=after_turn)
    plugin.llm.responder = slot

    await turn.bot.receive(group_message("大家好", group_id=GROUP, to_me=True))
    await turn.bot.receive(group_message("记一下", group_id=GROUP, to_me=True))
    await checked(plugin)

    after_the_save = main_reads(slot)[-1]
    if after_turn:
        assert after_the_save.cached_share > 0.8
    else:
        assert after_the_save.cached_share < 0.2


def test_only_a_check_on_the_chats_own_local_server_waits_for_the_turn() -> None:
    from nonebot_plugin_aimemory.config import Config
    from nonebot_plugin_aimemory.memory_and_chat_log import checks_after_turn

    local = "http://127.0.0.1:8080/v1"

    def waits(**settings: Any) -> bool:
        return checks_after_turn(Config(**{"aimemory_api_base": local, **settings}))

    assert waits()
    assert waits(aimemory_guard_api_base="http://127.0.0.1:8080/other/v1")
    assert waits(aimemory_api_base="http://192.168.1.20:11434/v1")
    assert not waits(aimemory_guard_check_after_turn=False)
    assert not waits(aimemory_guard_api_base="http://127.0.0.1:8081/v1")
    assert not waits(aimemory_api_base="https://api.deepseek.com/v1")
    assert not waits(aimemory_api_base="https://api.deepseek.com/v1", aimemory_guard_api_base=local)

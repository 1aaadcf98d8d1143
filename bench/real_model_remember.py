"""The real-model bench's chat, run on the plugin and on its window-only twin: the script, the
facts asked back, a restart, asked again (and in private), and what the window, the summary
and the memories hold afterwards."""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import harness as h
from bench import real_model_plugin as plugin
from bench.real_model_proxy import Exchange, RecordingProxy
from bench.real_model_script import GROUP_ID, MEMBERS, Member, Script, Step
from tests.fakes.events import group_message, private_message

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

ASK, ASK_RESTARTED, ASK_PRIVATE = "before restart", "after restart", "in private"
MEAN_GAP_SECONDS = 70
# The reviewer runs within the run: its tick, interval and minimum of new rows are small.
# Not 30 s: a slow model's turn takes longer than that, and a review after every turn would
# double the run's model time (and, on a one-slot server, evict every turn's cached prefix).
# Unaddressed lines are logged, so the chat-log tools and the reviewer see them.
REVIEW_TICK_SECONDS = 5
CHAT_SETTINGS: dict[str, Any] = {
    "aimemory_chat_log_ambient": True,
    "aimemory_review_tick_seconds": REVIEW_TICK_SECONDS,
    "aimemory_review_interval_seconds": 120,
    "aimemory_review_min_new_rows": 2,
}


@dataclass
class RememberRun:
    """One configuration's run of the chat and its questions."""

    label: str
    turns: list[plugin.TurnRecord]
    exchanges: list[Exchange]
    rejected: list[str]
    recalled: dict[str, list[bool]] = field(default_factory=dict)
    folds_before_questions: int = 0
    folds: int = 0
    verbatim_when_asked: list[bool] = field(default_factory=list)
    summary: str = ""
    memories: list[tuple[str, MemoryRecord]] = field(default_factory=list)
    settled: bool = True

    def tool_names(self) -> set[str]:
        """Every tool the run's requests offered."""
        return {name for exchange in self.exchanges for name in exchange.tool_names}


def squeezed(text: str) -> str:
    """`text` lower-cased without whitespace, for finding a value in a reply or memory."""
    return re.sub(r"\s+", "", text).lower()


async def remember_run(
    bench: h.Bench, script: Script, models: plugin.Models, window_only: bool, transcript: Path
) -> RememberRun:
    """Run the chat, ask, restart, ask again (and in private), on a database of its own."""
    label = "window only" if window_only else "ours"
    db_path = bench.work_dir / f"remember-{'window' if window_only else 'ours'}.db"
    settings = {**CHAT_SETTINGS, "aimemory_max_context_tokens": bench.args.budget}
    clock = plugin.EventClock(start_time_for(script), random.Random(bench.args.seed))
    # Long enough for the reviewer's next tick to start a review that is due.
    quiet_seconds = 1.0 if window_only else REVIEW_TICK_SECONDS + 1.0
    with RecordingProxy(models.routes()) as proxy:
        driver = plugin.Driver(proxy, "remember", label, transcript)
        run = RememberRun(label, driver.turns, proxy.exchanges, [])
        async with plugin.model_runtime(
            proxy, models, db_path, window_only=window_only, **settings
        ) as runtime:
            for step in script.steps:
                await send_step(driver, step, clock)
            run.settled &= await proxy.settle(quiet_seconds)
            run.folds_before_questions = await compressions(runtime)
            run.verbatim_when_asked, run.summary = await window_state(runtime, script)
            run.recalled[ASK] = await ask_all(driver, script, ASK, clock)
            run.settled &= await proxy.settle(quiet_seconds)
            truncations = plugin.compressions_of(runtime)
        async with plugin.model_runtime(
            proxy, models, db_path, window_only=window_only, **settings
        ) as runtime:
            run.recalled[ASK_RESTARTED] = await ask_all(driver, script, ASK_RESTARTED, clock)
            if not window_only:
                run.recalled[ASK_PRIVATE] = await ask_all(driver, script, ASK_PRIVATE, clock)
            run.settled &= await proxy.settle(quiet_seconds)
            run.folds = await compressions(runtime) + (truncations if window_only else 0)
            if not window_only:
                run.memories = await all_memories(runtime)
        driver.close()
        run.rejected = [reason for turn in driver.turns for reason in turn.rejected]
    return run


async def compressions(runtime: h.Runtime) -> int:
    """The group window's folds so far (stored with it), or the window-only twin's
    truncations in this runtime."""
    truncations = plugin.compressions_of(runtime)
    if truncations:
        return truncations
    return (await runtime.history.load_stats(h.group_key(GROUP_ID))).count


def said_in_group(
    text: str, member: Member, sent_at: int, *, group_id: int = GROUP_ID, to_me: bool = True
) -> Any:
    """`member`'s message in the group, sent at `sent_at`."""
    user_id, card = member.user_id, member.name
    return group_message(
        text, group_id=group_id, user_id=user_id, card=card, to_me=to_me, event_time=sent_at
    )


async def send_step(driver: plugin.Driver, step: Step, clock: plugin.EventClock) -> None:
    """One message of the script, addressed or not."""
    member = step.member
    event = said_in_group(step.text, member, clock.next(), to_me=step.addressed)
    if not step.addressed:
        await driver.ambient(event)
        return
    await driver.turn(
        event, driver.new_record("script", step.kind, member, step.text, fact=step.fact)
    )


async def ask_all(
    driver: plugin.Driver, script: Script, phase: str, clock: plugin.EventClock
) -> list[bool]:
    """Each fact's member asks for it (in the group, or in private); whether each reply
    holds the value."""
    recalled = []
    for index, fact in enumerate(script.facts):
        member, private, sent_at = fact.member, phase == ASK_PRIVATE, clock.next()
        event = (
            private_message(
                fact.question, user_id=member.user_id, nickname=member.name, event_time=sent_at
            )
            if private
            else said_in_group(fact.question, member, sent_at)
        )
        record = driver.new_record(
            phase, "question", member, fact.question, private=private, fact=index
        )
        turn = await driver.turn(event, record)
        recalled.append(squeezed(fact.value) in squeezed(turn.reply))
    return recalled


async def window_state(runtime: h.Runtime, script: Script) -> tuple[list[bool], str]:
    """Per fact, whether its message is still verbatim in the group's stored window; and the
    window's summary ("" when none)."""
    messages = await runtime.history.load(h.group_key(GROUP_ID))
    summary, body = runtime.compressor.split_summary(messages)
    said = [message.text for message in body if message.role == "user"]
    verbatim = [any(fact.statement in text for text in said) for fact in script.facts]
    return verbatim, summary or ""


async def all_memories(runtime: h.Runtime) -> list[tuple[str, MemoryRecord]]:
    """Every live memory of the group, the members' personal scopes and their private
    chats, with its scope."""
    from nonebot_plugin_aimemory.scopes import Scope

    service = h.memory_service(runtime)
    scopes = [Scope.group(GROUP_ID)]
    for member in MEMBERS:
        scopes += [Scope.person(member.user_id), Scope.friend(member.user_id)]
    found = []
    for scope in scopes:
        found += [(scope.key, record) for record in await service.list(scope.key)]
    return found


def start_time_for(script: Script) -> int:
    """An event time to start the chat at, so that its questions end about now."""
    messages = len(script.steps) + 3 * len(script.facts)
    return int(time.time()) - MEAN_GAP_SECONDS * messages - 600

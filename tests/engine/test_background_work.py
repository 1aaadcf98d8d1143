"""Calls made within background work (a review, an extraction) are background calls
whatever their role: the guard's check of a note a review saves waits while a member's call
is in flight, as the review's own call does, and is not cut short by the 20 s a member
would wait for it (issue #36: on one llama.cpp slot, checks of an extraction's saves held
a member's answer for 115 s, each then timing out)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx

from tests.engine.test_model_traffic import asking, clients, first_words, wait_for
from tests.fakes.openai_server import FakeOpenAI, Reply, held, text


def guard_and_main(http: httpx.AsyncClient, llm: FakeOpenAI):
    """A member's (main) client and the guard's, made as the runtime makes them."""
    return clients(http, llm, role="guard", counted_as="guard")


def member_held_until(gate: threading.Event):
    """Member calls held until `gate`; every other call answered "no" at once."""

    def respond(body: dict[str, Any]) -> Reply:
        return held(gate, text("答")) if first_words(body) == "member" else text("no")

    return respond


async def checked_while_a_member_waits(
    http: httpx.AsyncClient, llm: FakeOpenAI, *, in_background: bool
) -> list[str]:
    """What the server was asked, in order, when a guard check starts while a member's
    call is held for 0.3 s; the check made in background work or not."""
    from nonebot_plugin_aimemory.engine import background_work

    main, guard = guard_and_main(http, llm)
    gate = threading.Event()
    llm.responder = member_held_until(gate)
    member = asyncio.create_task(main.complete(asking("member")))
    await wait_for(lambda: len(llm.chat_requests) == 1)

    async def check() -> None:
        if in_background:
            with background_work():
                await guard.complete(asking("guard"))
        else:
            await guard.complete(asking("guard"))

    checking = asyncio.create_task(check())
    await asyncio.sleep(0.3)
    asked = [first_words(body) for body in llm.chat_requests]
    gate.set()
    await member
    await checking
    return asked


async def test_a_check_made_in_background_work_waits_for_the_member(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    assert await checked_while_a_member_waits(http, llm, in_background=True) == ["member"]
    assert [first_words(body) for body in llm.chat_requests] == ["member", "guard"]


async def test_a_check_a_member_waits_for_is_not_held_back(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    # a member's own save is checked in their turn: it goes at once
    assert await checked_while_a_member_waits(http, llm, in_background=False) == [
        "member",
        "guard",
    ]


async def test_a_background_check_outwaits_the_members_timeout(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    from nonebot_plugin_aimemory.engine import background_work
    from nonebot_plugin_aimemory.guard.model_check import ModelCheck

    main, guard = guard_and_main(http, llm)
    gate = threading.Event()
    llm.responder = member_held_until(gate)
    member = asyncio.create_task(main.complete(asking("member")))
    await wait_for(lambda: len(llm.chat_requests) == 1)
    asyncio.get_running_loop().call_later(0.6, gate.set)

    with background_work():
        in_background = await ModelCheck(guard, timeout_seconds=0.2).steers("我家猫叫豆包")
    await member
    # a verdict, though the member's call held the server three times the check's timeout
    assert in_background is False


async def test_a_check_in_a_members_turn_keeps_its_timeout(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    from nonebot_plugin_aimemory.guard.model_check import ModelCheck

    _, guard = guard_and_main(http, llm)
    llm.responder = lambda body: held(threading.Event(), text("no"))  # never answers

    assert await ModelCheck(guard, timeout_seconds=0.2).steers("我家猫叫豆包") is None

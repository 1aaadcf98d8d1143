"""Provenance of the facts extracted before compression: said by the sender of the folded
line a fact matches best (the bot's own lines are nobody's); a fact no line holds is not
saved (memory/grounding.py); shown as `自动整理`."""

from __future__ import annotations

import json

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import command, stored
from tests.memory.test_extraction import ExtractingLLM, talk_until_compressed

GROUP_ID = 1211
MEMBERS_FACT = "小明觉得周末爬山比看电影更好"
UNSAID_FACT = "本群的群主是老王"


async def start(plugin, responder: ExtractingLLM) -> None:
    """A small budget, for folds to come quickly (just over the fixed prompt's share)."""
    plugin.llm.responder = responder
    await plugin.restart(aimemory_max_context_tokens=1100, aimemory_tokenizer="cl100k")


def two_facts(transcript: str) -> str:
    facts = [{"content": MEMBERS_FACT}, {"content": UNSAID_FACT}]
    return json.dumps({"facts": facts}, ensure_ascii=False)


async def test_an_extracted_fact_is_said_by_the_sender_of_the_line_it_matches(plugin) -> None:
    await start(plugin, ExtractingLLM(two_facts))

    await talk_until_compressed(plugin, GROUP_ID)
    await plugin.runtime.memory.extractor.drain()

    saved = {r.content: r for r in await stored(plugin, f"g:{GROUP_ID}")}
    assert list(saved) == [MEMBERS_FACT]  # nobody said the other one
    members = saved[MEMBERS_FACT].provenance
    assert members.origin == "extract"
    assert members.said_by is not None
    assert (members.said_by.user_id, members.said_by.name) == ("2001", "小明")
    assert members.chat == f"g:{GROUP_ID}"
    listing = await command(RecordingBot(), group_message("~记忆 列表", group_id=GROUP_ID))
    assert f"{MEMBERS_FACT}（小明(2001) 说，自动整理）" in listing
    assert UNSAID_FACT not in listing


async def test_an_extracted_fact_about_its_sender_reaches_their_private_chat(plugin) -> None:
    from tests.fakes.events import private_message

    member = 20001
    fact = f"小明({member})觉得周末爬山比看电影更好"
    await start(plugin, ExtractingLLM(lambda _: json.dumps({"facts": [{"content": fact}]})))
    bot = RecordingBot()
    for i in range(60):
        line = f"话题{i} 周末去爬山还是去看电影？大家投票决定一下吧，我觉得爬山更好一些。"
        await bot.receive(group_message(line, to_me=True, group_id=GROUP_ID, user_id=member))
        if plugin.runtime.sessions.get(f"g:{GROUP_ID}").bot.stats.count:
            break
    await plugin.runtime.memory.extractor.drain()

    assert [r.content for r in await stored(plugin, f"g:{GROUP_ID}")] == [fact]
    # also the member's own, privately: their private chat knows it, no group does
    (copy,) = await stored(plugin, f"u:{member}")
    assert (copy.content, copy.private, copy.provenance.origin) == (fact, True, "extract")
    await bot.receive(private_message("周末爬山还是看电影来着？", user_id=member))
    assert fact in str(plugin.llm.chat_requests[-1]["messages"][-1]["content"])

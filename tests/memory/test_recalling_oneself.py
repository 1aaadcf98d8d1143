"""A member asking the bot for something of their own, when no note found by its words is
about them, gets their newest personal notes before the question; nobody else's, and not
for a question of the world."""

from __future__ import annotations

from tests.fakes.bots import RecordingBot
from tests.memory.personal_helpers import (
    BIRTHDAY,
    BOB,
    GROUP_A,
    GROUP_B,
    answer_briefly,
    bob_alone,
    bob_in,
    carol_in,
    injected_lines,
    last_user_content,
    save_for_speaker,
)

# A car named in passing: "车" is nowhere in it (the real small model answered "宝马").
TYRES = "Bob说：我的小米SU7今天提示胎压低"
CLASS = "Bob每周六上午去学击剑"


async def bob_saves_two_notes(plugin, bot: RecordingBot) -> None:
    answer_briefly(plugin)
    await save_for_speaker(plugin, bot, bob_in(GROUP_A, "我的小米SU7今天提示胎压低"), TYRES)
    await save_for_speaker(plugin, bot, bob_in(GROUP_A, "每周六上午我都去学击剑"), CLASS)


def injected(plugin) -> str:
    return "\n".join(injected_lines(last_user_content(plugin)))


async def test_a_question_of_ones_own_no_word_finds_gets_ones_newest_notes(plugin) -> None:
    bot = RecordingBot()
    await bob_saves_two_notes(plugin, bot)

    await bot.receive(bob_in(GROUP_B, "我开的是什么车来着？"))

    newest, older = injected_lines(last_user_content(plugin))
    assert "击剑" in newest
    assert "小米SU7" in older


async def test_a_note_its_words_find_is_shown_alone(plugin) -> None:
    bot = RecordingBot()
    await bob_saves_two_notes(plugin, bot)

    await bot.receive(bob_in(GROUP_B, "我每周六上午去学什么来着？"))

    (line,) = injected_lines(last_user_content(plugin))
    assert "击剑" in line


async def test_a_chat_note_about_the_asker_found_by_its_words_is_enough(plugin) -> None:
    # shown the daughter's note beside the cat's, the real small model first answered
    # the daughter's name with the cat's
    bot = RecordingBot()
    await bob_saves_two_notes(plugin, bot)
    daughter = "Bob(2101)说：“我女儿安安今天第一次自己系鞋带”"
    saved = await plugin.runtime.memory.service.save(f"g:{GROUP_B}", daughter, user_id=str(BOB))
    assert saved.status == "saved"

    await bot.receive(bob_in(GROUP_B, "我女儿小名叫什么来着？"))

    (line,) = injected_lines(last_user_content(plugin))
    assert "安安" in line


async def test_only_the_askers_notes_and_only_when_asked_of_their_own(plugin) -> None:
    bot = RecordingBot()
    await bob_saves_two_notes(plugin, bot)

    await bot.receive(carol_in(GROUP_A, "我开的是什么车来着？"))
    carols = injected(plugin)
    await bot.receive(bob_in(GROUP_A, "地球到月球大概多远？"))
    the_worlds = injected(plugin)
    await bot.receive(bob_in(GROUP_A, "他开的是什么车来着？"))
    someone_elses = injected(plugin)

    assert (carols, the_worlds, someone_elses) == ("", "", "")


async def test_a_private_note_is_shown_only_in_its_owners_private_chat(plugin) -> None:
    bot = RecordingBot()
    answer_briefly(plugin)
    await save_for_speaker(plugin, bot, bob_alone("记住我的生日"), BIRTHDAY)

    await bot.receive(bob_in(GROUP_A, "我跟你说过我哪天过生日来着？"))
    in_the_group = injected(plugin)
    await bot.receive(bob_alone("我跟你说过的那个日子是哪天来着？"))
    in_private = injected(plugin)

    assert in_the_group == ""
    assert "五月二日" in in_private

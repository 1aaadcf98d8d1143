"""Copies of one group message received through several accounts (conversation/copies.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.conversation.copies import ReceivedCopies

CHAT = "g:777"
SENT = 1_796_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def copies(clock: Clock | None = None) -> ReceivedCopies:
    from nonebot_plugin_aimemory.conversation.copies import ReceivedCopies

    return ReceivedCopies(clock or Clock())


def test_a_copy_through_another_account_is_the_same_message() -> None:
    seen = copies()
    first = seen.receive(CHAT, "2001", "今天下雨了", SENT, "42")
    second = seen.receive(CHAT, "2001", "今天下雨了", SENT + 5, "43")
    assert second is first
    assert first.receivers == {"42", "43"}


def test_the_same_words_again_through_the_same_account_are_a_new_message() -> None:
    seen = copies()
    first = seen.receive(CHAT, "2001", "哈哈", SENT, "42")
    again = seen.receive(CHAT, "2001", "哈哈", SENT + 1, "42")
    assert again is not first
    # Each account's copy of each goes with its own message, in order.
    assert seen.receive(CHAT, "2001", "哈哈", SENT, "43") is first
    assert seen.receive(CHAT, "2001", "哈哈", SENT + 1, "43") is again


def test_other_sender_other_words_other_chat_or_a_minute_apart_are_other_messages() -> None:
    seen = copies()
    first = seen.receive(CHAT, "2001", "你好", SENT, "42")
    assert seen.receive(CHAT, "2002", "你好", SENT, "43") is not first
    assert seen.receive(CHAT, "2001", "你好！", SENT, "43") is not first
    assert seen.receive("g:778", "2001", "你好", SENT, "43") is not first
    assert seen.receive(CHAT, "2001", "你好", SENT + 61, "43") is not first


def test_the_lowest_account_present_answers_and_the_others_do_not() -> None:
    seen = copies()
    peers = frozenset({"42", "43"})
    seen.receive(CHAT, "2001", "大家好", SENT, "42")  # 42 is known to be in the group
    message = seen.receive(CHAT, "2001", "小忆 在吗", SENT, "43")
    assert seen.decide(message, CHAT, "43", peers) is None  # 43 waits for 42's copy
    seen.receive(CHAT, "2001", "小忆 在吗", SENT, "42")
    assert seen.decide(message, CHAT, "42", peers) is True
    assert message.answered_by == "42"
    assert seen.decide(message, CHAT, "43", peers) is False


def test_a_higher_account_answers_when_the_lower_one_never_got_the_message() -> None:
    seen = copies()
    peers = frozenset({"42", "43"})
    seen.receive(CHAT, "2001", "大家好", SENT, "42")
    message = seen.receive(CHAT, "2001", "小忆 在吗", SENT, "43")
    assert seen.decide(message, CHAT, "43", peers, waited=True) is True
    # The lower account's late copy finds the message answered.
    seen.receive(CHAT, "2001", "小忆 在吗", SENT, "42")
    assert seen.decide(message, CHAT, "42", peers) is False


def test_an_account_the_group_was_heard_without_does_not_hold_the_answer_back() -> None:
    clock = Clock()
    seen = copies(clock)
    seen.receive(CHAT, "2001", "大家好", SENT, "43")
    clock.now = 3.0  # longer than a copy through another account takes: 42 is not here
    message = seen.receive(CHAT, "2001", "小忆 在吗", SENT + 3, "43")
    assert seen.decide(message, CHAT, "43", frozenset({"42", "43"})) is True
    seen.receive(CHAT, "2001", "小忆 在吗", SENT + 3, "42")
    assert seen.decide(message, CHAT, "42", frozenset({"42", "43"})) is False


def test_in_a_group_just_heard_every_lower_account_connected_is_waited_for() -> None:
    # Copies through two connections come in any order: the first message of a quiet
    # group, received by the higher account first, is still the lower one's to answer.
    seen = copies()
    peers = frozenset({"42", "43"})
    message = seen.receive(CHAT, "2001", "~对话 状态", SENT, "43")
    assert seen.decide(message, CHAT, "43", peers) is None
    seen.receive(CHAT, "2001", "~对话 状态", SENT, "42")
    assert seen.decide(message, CHAT, "42", peers) is True
    assert seen.decide(message, CHAT, "43", peers) is False


def test_an_account_silent_in_the_group_for_ten_minutes_is_taken_to_have_left() -> None:
    clock = Clock()
    seen = copies(clock)
    seen.receive(CHAT, "2001", "大家好", SENT, "42")
    for clock.now in (300.0, 600.0):  # the group goes on talking, 43 hears it all
        seen.receive(CHAT, "2001", f"第{clock.now}秒", SENT + clock.now, "43")
    clock.now = 601.0
    message = seen.receive(CHAT, "2001", "小忆 在吗", SENT + 601, "43")
    assert seen.decide(message, CHAT, "43", frozenset({"42", "43"})) is True


def test_a_group_quiet_for_ten_minutes_is_heard_anew() -> None:
    clock = Clock()
    seen = copies(clock)
    seen.receive(CHAT, "2001", "大家好", SENT, "43")
    clock.now = 700.0  # nobody said anything since: 42's absence says nothing
    message = seen.receive(CHAT, "2001", "小忆 在吗", SENT + 700, "43")
    assert seen.decide(message, CHAT, "43", frozenset({"42", "43"})) is None


def test_an_account_no_longer_connected_is_not_waited_for() -> None:
    seen = copies()
    seen.receive(CHAT, "2001", "大家好", SENT, "42")
    message = seen.receive(CHAT, "2001", "小忆 在吗", SENT, "43")
    assert seen.decide(message, CHAT, "43", frozenset({"43"})) is True


def test_numbers_are_compared_as_numbers() -> None:
    from nonebot_plugin_aimemory.conversation.copies import takes_the_answer

    assert takes_the_answer("10", ["9", "10"], waited=False) is None  # 9 < 10, though "10" < "9"
    assert takes_the_answer("9", ["9", "10"], waited=False) is True
    assert takes_the_answer("10", ["9", "10"], waited=True) is True

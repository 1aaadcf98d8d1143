"""Stock replies: an answer that repeats one the model gave to another message of the
window, or the message itself, or that speaks about a question instead of answering it.
Small models copy the shapes in their context ("好的，记下了" to a question about the
moon), so such an answer is asked for once more, with a note on that request only.
A copy of a tool result of the turn ("已保存记忆 #skpn …" as the answer) is no answer either."""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Sequence

from ..text import asks_what, is_acknowledgement, is_question, only_acknowledges
from .messages import Message

# How far back the model's own replies are compared: what it sees and may copy.
RECENT_REPLIES = 12
# Character-bigram overlap (Dice) from which two replies count as the same one with its
# names changed ("好的，我已经记住了小明的猫咪名" / "…阿强的车辆信息": 0.52), and from which
# two messages count as the same question asked again.
SAME_REPLY_DICE = 0.5
SAME_QUESTION_DICE = 0.6
# A reply holding the member's whole message and little else is the message said back
# ("阿强：我开的是什么车来着？"); a confirmation in other words ("记住啦，…") is not.
ECHO_DICE = 0.8
# ... when the message has this many letters and digits: "你好" said back is a greeting.
ECHO_MIN_CHARS = 6
# Replies with fewer letters and digits than this are left alone, "好的" or "收到，马上办"
# twice being how people talk, unless a question gets one given to several others.
MIN_REPLY_CHARS = 10
# ... given to this many other messages before, a short reply is the model's shape.
SHORT_REPLY_REPEATS = 2
# A short reply without these names a thing ("豆包", "杭州。"): no one speaking or spoken
# to, nothing denied or affirmed, no particle. Two what-questions rarely have one such answer.
_SENTENCE_MARKS = frozenset("我你您他她它咱俺们不没别是对嗯哦啊呀吧呢吗")
# Texts kept folded: a window's recent replies and their questions are compared again on
# every turn of their chat, each folded anew; a dozen chats' worth, each about the size
# of its text (their bigrams' sets would be ten times that).
FOLDED_CACHED = 256


# A user line's head the plugin writes, "[time] name(QQ)：" ("[time] " in a private chat,
# where a "记住：" after it is what was asked): the same on every line of a speaker.
_SPEAKER_HEAD = re.compile(r"^\[[^\]\n]{0,40}\]\s*(?:[^：:\n]{0,60}[(（]\d{1,12}[)）][：:])?")


@functools.lru_cache(maxsize=FOLDED_CACHED)
def _folded(text: str) -> str:
    """`text`'s letters and digits, case and width folded, the speaker line's head aside."""
    text = _SPEAKER_HEAD.sub("", text, count=1)
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalnum())


def _bigrams(text: str) -> frozenset[str]:
    folded = _folded(text)
    return frozenset(folded[i : i + 2] for i in range(len(folded) - 1))


def _dice(a: frozenset[str], b: frozenset[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a and b else 0.0


def is_stock_reply(reply: str, asked: str, window: Sequence[Message]) -> bool:
    """Whether `reply` to the message `asked` repeats, word for word or nearly, a reply
    the window holds to a different message, or the message itself; or, to a question,
    quotes it or only says it noted something."""
    shape = _bigrams(reply)
    asked_shape = _bigrams(asked)
    if _echoes(shape, asked_shape):
        return True  # the member's whole message said back, a name at most added
    if is_question(asked) and _quotes(reply, asked_shape):
        return True  # a reply about the question, not to it
    if asks_what(asked) and is_acknowledgement(reply):
        return True  # "好的，我已记录下你的回复。" to "我在哪家公司上班来着？"
    if len(shape) + 1 < MIN_REPLY_CHARS:
        if not is_question(asked):
            return False
        given = _short_reply_given_before(reply, asked_shape, window)
        if asks_what(asked) and _names_a_thing(reply):
            # the very name another what-question got; "ECHO: 几点" and "ECHO: 啥" are
            # near in bigrams but name different things
            return any(_folded(m.text) == _folded(reply) and asks_what(q) for m, q in given)
        return len(given) >= SHORT_REPLY_REPEATS
    for message in _recent_replies(window):
        before = _bigrams(message.text)
        if _dice(before, shape) < SAME_REPLY_DICE or _takes_up(shape - before, asked_shape):
            continue
        if _dice(_bigrams(_question_before(window, message)), asked_shape) < SAME_QUESTION_DICE:
            return True
    return False


def _recent_replies(window: Sequence[Message]) -> list[Message]:
    """The model's last RECENT_REPLIES text replies, newest first."""
    replies = (m for m in reversed(window) if m.role == "assistant" and m.text and not m.tool_calls)
    return list(itertools.islice(replies, RECENT_REPLIES))


# Quotation marks a reply puts a message between: what it says about the message.
_QUOTATIONS = re.compile(r"“([^”\n]+)”|「([^」\n]+)」|『([^』\n]+)』|\"([^\"\n]+)\"|‘([^’\n]+)’")
# The share of a question's bigrams a quotation holds from which it quotes the question.
QUOTED_QUESTION_SHARE = 0.8


def _quotes(reply: str, asked: frozenset[str]) -> bool:
    """Whether `reply` quotes most of the member's question: it speaks about the question
    ("好的，我会记下小明对“女儿小名叫什么来着？”的回复。", the real small model's answer to a
    question it had no note for); an answer restates a question without quotation marks."""
    if not asked:
        return False
    for match in _QUOTATIONS.finditer(reply):
        quoted = _bigrams(next(group for group in match.groups() if group))
        if len(quoted & asked) >= QUOTED_QUESTION_SHARE * len(asked):
            return True
    return False


def _echoes(reply: frozenset[str], asked: frozenset[str]) -> bool:
    """Whether a reply holds the member's whole message and little else."""
    long_enough = len(asked) + 1 >= ECHO_MIN_CHARS
    return long_enough and asked <= reply and _dice(reply, asked) >= ECHO_DICE


def same_reply(one: str, other: str) -> bool:
    """Whether two replies say the same thing, word for word or with names changed."""
    if _folded(one) == _folded(other):
        return True
    return _dice(_bigrams(one), _bigrams(other)) >= SAME_REPLY_DICE


def _names_a_thing(reply: str) -> bool:
    """Whether a short reply only names something: no pronoun, no negation, no particle,
    not an assent ("好的", "收到")."""
    folded = _folded(reply)
    if not folded or _SENTENCE_MARKS.intersection(folded):
        return False
    return not only_acknowledges(reply)


def _short_reply_given_before(
    reply: str, asked: frozenset[str], window: Sequence[Message]
) -> list[tuple[Message, str]]:
    """The model's recent replies saying what a short `reply` says, word for word or
    nearly, to other messages, each with its message. Two or more are its shape, not an
    answer to a question ("已记。" to "豆腐脑甜的好吃还是咸的？" after two "已记。"; "明白
    了，我会记住。" to "猫为什么喜欢钻纸箱？" after "明白了，我会记住事实。", seen with the
    real small model); one earlier "好的" is how people talk. But one bare name another
    what-question got is the name copied: the real small model answered "豆包" (the cat's
    name, given to "我家猫叫什么名字来着？" three turns before) to "我女儿小名叫什么来着？",
    in three runs of three, with the note naming 安安 in its request."""
    given = []
    for message in _recent_replies(window):
        if not same_reply(message.text, reply):
            continue
        before = _question_before(window, message)
        if _dice(_bigrams(before), asked) < SAME_QUESTION_DICE:
            given.append((message, before))
    return given


def _takes_up(new: frozenset[str], asked: frozenset[str]) -> bool:
    """Whether what a reply says beyond the earlier one comes mostly from the question: an
    answer in the same form about another thing asked ("明天上海晴" after "明天北京晴")."""
    return bool(new) and len(new & asked) * 2 >= len(new)


def _question_before(window: Sequence[Message], reply: Message) -> str:
    """The user message `reply` answered (the last one before it)."""
    index = max(i for i, m in enumerate(window) if m is reply)
    for message in reversed(window[:index]):
        if message.role == "user":
            return message.text
    return ""


# The share of an answer's bigrams found in one tool result from which the answer is that
# result said back ("已保存记忆 #skpn 我现在在星河科技上班。 [标签：…]").
TOOL_RESULT_COPY_SHARE = 0.8


def copies_a_tool_result(reply: str, turn: Sequence[Message], asked: str = "") -> bool:
    """Whether `reply` is mostly the text of one of the turn's tool results, or, quoting
    in 「」 as the plugin quotes notes, of the member's message with the notes before it
    ("[20001] 「小明(20001)说：我家猫叫团子。」"). Only what the member did not say
    (`asked`) counts: an answer restating the member's words, which a save's result also
    holds ("我记住了，我在学尤克里里"), is kept; so is a note restated in own words."""
    shape = _bigrams(reply) - _bigrams(asked)
    if len(shape) + 1 < MIN_REPLY_CHARS:
        return False
    quoting = _QUOTED.search(reply) is not None
    shown = [m for m in turn if m.text and (m.role == "tool" or (quoting and m.role == "user"))]
    sources = (_bigrams(m.text) for m in shown)
    return any(len(shape & source) >= TOOL_RESULT_COPY_SHARE * len(shape) for source in sources)


# A span in the corner brackets the plugin quotes notes and memories in.
_QUOTED = re.compile(r"「[^」\n]+」")

"""The mood of a line: whether it ends as a question does, asks for information, or only
acknowledges. A memory is a statement, and a model that saves a member's question ("学吉他
难吗？") saved nothing anyone could use; a reply given before to another message, or one
that only acknowledges, is no answer to a question (engine/stock_replies.py)."""

from __future__ import annotations

import re
import unicodedata

from .lines import NAMED_PERSON

# How a question ends in the scripts members write.
_QUESTION_MARKS = ("?", "？", "؟")
# Members often leave the mark out; a sentence-final 吗/么 asks all the same ("记住了吗").
_QUESTION_PARTICLES = ("吗", "么")
_NOT_ASKING = ("这么", "那么", "多么", "要么")
_CLOSERS = " \t\n\"'”’）)」』】]"
_SENTENCE_ENDS = "。！!～~…. "


def is_question(text: str) -> bool:
    """Whether `text` ends as a question does (closing quotes, brackets and a full stop
    aside): with a question mark, or with 吗/么."""
    ending = text.rstrip(_CLOSERS)
    if ending.endswith(_QUESTION_MARKS):
        return True
    ending = ending.rstrip(_SENTENCE_ENDS)
    return ending.endswith(_QUESTION_PARTICLES) and not ending.endswith(_NOT_ASKING)


# Words that only acknowledge (or say what is acknowledged: "你的回复", "之前的对话"), and
# the pronouns and particles around them; a reply made of nothing else says nothing more.
_ACKNOWLEDGING_WORDS = """
    好的 好嘞 好滴 好 嗯嗯 嗯 行 收到 明白 了解 知道 懂 清楚 没问题
    记住 记下 记好 记录 记得 记 已经 已 会 将 一定 帮你 为你 给你
    我 你 您 的 了 啦 呢 哦 噢 呀 吧 下来 下 住 好了
    这条 这个 这些 回复 消息 信息 内容 话 事情 事 你说
    提问 问题 并 和 参考 之前 以前 对话 聊天 上下文 记忆
    ok okay got it noted sure understood will remember i you your this that
"""


def _alternatives(words: str) -> re.Pattern[str]:
    """A pattern matching any of the space-separated `words`, longest first."""
    return re.compile("|".join(sorted(words.split(), key=len, reverse=True)))


_ACKNOWLEDGING = _alternatives(_ACKNOWLEDGING_WORDS)
# The acknowledging words that speak of noting something.
_NOTING = re.compile(r"记|noted|remember")
# The words a question asks for information with (what, where, who…): "好的" or "记住了"
# answers a request or a yes-or-no question, never one of these. "怎么样", "如何" and "how
# about" also ask for a yes ("周末去爬山怎么样？" → "好的") and are left out.
_ASKING_WHAT = re.compile(
    r"什么|啥|哪|谁|几|多少|怎么(?!样)|为什么|为啥|多远|多久|多大|多长|多高|多重|多贵"
    r"|\b(?:what|where|who|whom|whose|when|why|which)\b|\bhow\b(?!\s+about)",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[，,。！!？?；;：:\n]")


def is_acknowledgement(text: str) -> bool:
    """Whether `text` only says it noted something ("好的，我已记录下你的回复。", "记住了。",
    "OK, noted"), whoever it names: nothing is left once its acknowledging words are taken
    out, and one of them speaks of noting. A bare "好的" or "收到" is how people answer a
    suggestion, and is left alone."""
    words = _words(text)
    return _NOTING.search(words) is not None and _only_acknowledging(words)


def only_acknowledges(text: str) -> bool:
    """Whether `text` holds nothing but acknowledging words ("好的", "嗯嗯，收到"), whether
    or not it speaks of noting something."""
    return _only_acknowledging(_words(text))


def _words(text: str) -> str:
    folded = NAMED_PERSON.sub(" ", unicodedata.normalize("NFKC", text).casefold())
    return " ".join("".join(ch if ch.isalnum() else " " for ch in folded).split())


def _only_acknowledging(words: str) -> bool:
    return bool(words) and not _ACKNOWLEDGING.sub("", words).replace(" ", "")


def asks_what(text: str) -> bool:
    """Whether the last clause of `text` asks for information (what, where, who, how…)
    rather than for a yes or a no: "我开的是什么车来着？", "多远？"."""
    clauses = [clause for clause in _CLAUSE.split(text) if clause.strip()]
    return bool(clauses) and _ASKING_WHAT.search(clauses[-1]) is not None


# A member asking the bot for something of their own: the first person, a word of
# recalling, and a word asking what ("我开的是什么车来着？", "你还记得我女儿叫什么吗？").
_FIRST_PERSON = re.compile(r"我|俺|\b(?:i|my|me|mine)\b", re.IGNORECASE)
_RECALLING = re.compile(
    r"来着|记得|记不记得|忘了|说过|告诉过|提过|讲过|\b(?:remember|told you|forgot|did i)\b",
    re.IGNORECASE,
)


def recalls_oneself(text: str) -> bool:
    """Whether `text` asks the bot to recall something the member told about themselves:
    the first person, a word of recalling and a word asking what, in any clause ("我忘了我
    下周去哪出差，你记得吗？" asks what all the same)."""
    return all(
        pattern.search(text) is not None for pattern in (_FIRST_PERSON, _RECALLING, _ASKING_WHAT)
    )

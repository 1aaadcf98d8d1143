"""The mood of a line: whether it ends as a question does. A memory is a statement, and
a model that saves a member's question ("学吉他难吗？") saved nothing anyone could use; a
reply given before to another message is no answer to a question (engine/stock_replies.py)."""

from __future__ import annotations

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

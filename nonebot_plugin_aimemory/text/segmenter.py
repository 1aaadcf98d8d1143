"""Chinese-aware tokenisation (jieba) shared by memory matching and chat-log search."""

from __future__ import annotations

import logging
import re
import threading
from functools import lru_cache

_init_lock = threading.Lock()
_initialised = False
_CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[\w\u3400-\u9fff\uf900-\ufaff]", re.UNICODE)
SHORT_CJK_RUN_CHARS = 4
STOPWORDS = frozenset(
    [
        "的",
        "了",
        "是",
        "在",
        "我",
        "你",
        "他",
        "她",
        "它",
        "们",
        "和",
        "与",
        "及",
        "或",
        "也",
        "就",
        "都",
        "而",
        "及",
        "着",
        "过",
        "吗",
        "呢",
        "吧",
        "啊",
        "呀",
        "哦",
        "嗯",
        "这",
        "那",
        "有",
        "没",
        "不",
        "很",
        "还",
        "又",
        "被",
        "把",
        "让",
        "给",
        "对",
        "从",
        "到",
        "为",
        "以",
        "之",
        "其",
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "to",
        "of",
        "and",
        "or",
        "in",
        "on",
        "at",
        "for",
        "with",
    ]
)


def initialise() -> None:
    """Load jieba's dictionary (~1 s, blocking): call once through `asyncio.to_thread`."""
    global _initialised
    with _init_lock:
        if _initialised:
            return
        import jieba

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        _initialised = True


# Small: hits come from one text cut several times within a turn, not across turns.
@lru_cache(maxsize=256)
def _cut(text: str) -> tuple[str, ...]:
    import jieba

    if not _initialised:
        initialise()
    return tuple(jieba.lcut_for_search(text))


def tokens(text: str) -> list[str]:
    """Search tokens of `text`: jieba words (lower-cased, no punctuation or stopwords) plus
    the character bigrams of short CJK runs, which jieba often splits badly (names)."""
    result: list[str] = []
    for word in _cut(text):
        word = word.strip().lower()
        if word and word not in STOPWORDS and _WORD.search(word):
            result.append(word)
    for run in _CJK_RUN.findall(text):
        if 2 < len(run) <= SHORT_CJK_RUN_CHARS:
            result.extend(run[i : i + 2] for i in range(len(run) - 1))
    return result


def token_set(text: str) -> frozenset[str]:
    """The distinct tokens of `text`."""
    return frozenset(tokens(text))


def segmented(text: str) -> str:
    """Space-joined tokens, for an FTS5 index whose tokenizer does not split Chinese."""
    return " ".join(tokens(text))


def dice(a: frozenset[str], b: frozenset[str]) -> float:
    """Dice coefficient of two token sets (1.0 = same tokens)."""
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))

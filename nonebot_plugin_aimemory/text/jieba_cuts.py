"""jieba's segmentation, from whichever implementation is installed: `rjieba` (jieba-rs,
the same algorithm and dictionary in Rust: ~33 MB and 0.15 s to load, 10-17x faster per
text) where it has wheels, the pure-Python `jieba` (~66 MB and ~1-1.7 s) elsewhere. Both
give the same cuts for every use here (bench/README.md, the segmenter study: 100 % of a
10 000-sentence mixed corpus), so an index written by one stays valid under the other.
Neither is loaded until it is first needed.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("nonebot_plugin_aimemory")


@dataclass(frozen=True)
class Cutter:
    """One loaded implementation: its name, search-mode cut and dictionary lookup."""

    name: str
    cut_for_search: Callable[[str, bool], list[str]]
    has_word: Callable[[str], bool]


_lock = threading.Lock()
_cutter: Cutter | None = None
_cache_dir: str | None = None
_prefer_python = False


def use_cache_dir(path: str | Path) -> None:
    """Keep pure-Python jieba's dictionary cache (`jieba.cache`, ~9 MB, written on its
    first load) in `path` instead of the system temp directory; rjieba writes nothing."""
    global _cache_dir
    _cache_dir = str(path)


def prefer_pure_python(prefer: bool = True) -> None:
    """Use pure-Python jieba even where rjieba is installed (the agreement bench and the
    tests that compare the two); takes effect at the next load."""
    global _prefer_python, _cutter
    with _lock:
        _prefer_python = prefer
        _cutter = None


def cutter() -> Cutter:
    """The loaded implementation, loading it on first use (blocking: ~0.15 s for rjieba,
    ~1 s for jieba; `load_in_background` avoids the wait where that matters)."""
    loaded = _cutter
    return loaded if loaded is not None else load()


def load() -> Cutter:
    """Load the implementation once, whichever thread asks first; others wait for it."""
    global _cutter
    with _lock:
        if _cutter is None:
            _cutter = _python_jieba() if _prefer_python else (_rjieba() or _python_jieba())
            logger.debug("segmentation by %s", _cutter.name)
        return _cutter


def is_loaded() -> bool:
    """Whether an implementation is loaded."""
    return _cutter is not None


def needs_a_slow_load() -> bool:
    """Whether the first load takes long enough (pure-Python jieba's ~1 s) to start it in
    the background at start-up rather than in the first message's way."""
    if _prefer_python:
        return True
    try:
        import importlib.util

        return importlib.util.find_spec("rjieba") is None
    except (ImportError, ValueError):
        return True


def load_in_background() -> None:
    """Start loading in a daemon thread; whoever needs it first waits only for the rest."""
    if _cutter is None:
        threading.Thread(target=load, name="aimemory-jieba-load", daemon=True).start()


# rjieba (jieba-rs 0.11) keeps an ASCII run joined by . - or _ whole ("thought-provoking",
# "2015-11-16", "T_T") and adds its parts in search mode; jieba splits it with its HMM
# fallback's pattern (jieba.finalseg.re_skip), a plain decimal aside. About one chat text in
# twenty has such a run; only those are cut again the jieba way.
_JOINED_ASCII = re.compile(r"[A-Za-z0-9]+(?:[._\-][A-Za-z0-9]+)+%?")
_DECIMAL = re.compile(r"\d+(?:\.\d+)?%?")
_JIEBA_ASCII_PIECE = re.compile(r"([a-zA-Z0-9]+(?:\.\d+)?%?)")


def _rjieba() -> Cutter | None:
    try:
        import rjieba
    except ImportError:
        return None

    def cut_for_search(text: str, hmm: bool) -> list[str]:
        words = rjieba.cut_for_search(text, hmm)
        # A word can be such a run only if the text holds one: most texts are let through
        # by one scan of the text instead of a test of each word.
        if not _JOINED_ASCII.search(text) or not any(_is_joined_ascii(w) for w in words):
            return words
        return _jieba_search_mode(rjieba.cut(text, hmm), rjieba.has_word)

    return Cutter("rjieba", cut_for_search, rjieba.has_word)


def _is_joined_ascii(word: str) -> bool:
    return bool(_JOINED_ASCII.fullmatch(word)) and not _DECIMAL.fullmatch(word)


def _jieba_search_mode(words: list[str], has_word: Callable[[str], bool]) -> list[str]:
    """jieba's search mode over an exact cut: each word after the dictionary 2- and 3-grams
    inside it, joined ASCII runs first split as jieba splits them."""
    result: list[str] = []
    for word in words:
        pieces = (
            [p for p in _JIEBA_ASCII_PIECE.split(word) if p] if _is_joined_ascii(word) else [word]
        )
        for piece in pieces:
            if len(piece) > 2:
                result.extend(g for i in range(len(piece) - 1) if has_word(g := piece[i : i + 2]))
            if len(piece) > 3:
                result.extend(g for i in range(len(piece) - 2) if has_word(g := piece[i : i + 3]))
            result.append(piece)
    return result


def _python_jieba() -> Cutter:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    if _cache_dir is not None:
        # jieba declares tmp_dir as None (unset); a directory is what it reads there.
        jieba.dt.tmp_dir = _cache_dir  # pyright: ignore[reportAttributeAccessIssue]
    jieba.initialize()
    frequencies = jieba.dt.FREQ

    def cut_for_search(text: str, hmm: bool) -> list[str]:
        return jieba.lcut_for_search(text, HMM=hmm)

    # jieba's FREQ also holds every word's prefixes, at frequency 0: those are no words.
    return Cutter("jieba", cut_for_search, lambda word: bool(frequencies.get(word)))

"""The segmenter's two implementations: rjieba where it is installed, pure-Python jieba
elsewhere. The index and both searches depend on the cuts, so the two must give the same
terms; and the plugin must fall back to jieba when rjieba cannot be imported."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Chat as the index sees it: names, slang, dates, numbers, English and emoji mixed in.
SENTENCES = [
    "我们之前说的那个量子物理的课，下周三下午三点在图书馆三楼",
    "小明昨天去北京大学参加了人工智能研讨会，回来说收获很大",
    "今天吃了螺蛳粉🍜，yyds！绝绝子",
    "老王说他2024年5月2日要搬去杭州西湖区，房租每月3500元",
    "周杰伦的新专辑什么时候发？我想买黑胶唱片",
    "明天的会议改到10:30了，记得带上上个月的报表",
    "这个bug是因为Python的GIL，换成多进程就好了",
    "张三丰和李四光是两个完全不同时代的人",
    "我家猫咪叫咪咪，三岁了，最喜欢吃三文鱼罐头",
    "你觉得emo是什么意思？就是情绪低落的意思吧",
]


@pytest.fixture
def jieba_cuts() -> Iterator[ModuleType]:
    """The implementation switch, put back to rjieba (where installed) afterwards."""
    from nonebot_plugin_aimemory.text import jieba_cuts

    try:
        yield jieba_cuts
    finally:
        jieba_cuts.prefer_pure_python(False)
        cuts_of([])


def cuts_of(sentences: list[str]) -> tuple[list[list[str]], list[list[str]], list[bool]]:
    """Terms, rule tokens and dictionary look-ups of `sentences`, with no cached cuts."""
    from nonebot_plugin_aimemory.text import segmenter

    segmenter._cut_exact.cache_clear()  # pyright: ignore[reportPrivateUsage]
    segmenter._cut.cache_clear()  # pyright: ignore[reportPrivateUsage]
    terms = [segmenter.terms(s) for s in sentences]
    tokens = [sorted(segmenter.token_set(s)) for s in sentences]
    words = [w for s in sentences for w in segmenter.terms(s)]
    known = [segmenter.in_dictionary(w) for w in words]
    return terms, tokens, known


def test_rjieba_and_jieba_give_the_same_terms_tokens_and_dictionary_words(
    jieba_cuts: ModuleType,
) -> None:
    pytest.importorskip("rjieba", reason="rjieba has no wheel for this platform")
    jieba_cuts.prefer_pure_python(False)
    assert jieba_cuts.load().name == "rjieba"
    fast = cuts_of(SENTENCES)
    jieba_cuts.prefer_pure_python(True)
    assert jieba_cuts.load().name == "jieba"
    slow = cuts_of(SENTENCES)
    assert fast[0] == slow[0]
    assert fast[1] == slow[1]
    assert fast[2] == slow[2]
    # Not vacuous: the terms hold dictionary words, bigrams of unknown names, numbers.
    assert "量子" in fast[0][0]
    assert "图书馆" in fast[0][0]
    assert "2024" in fast[0][3]
    assert "3500" in fast[0][3]


def test_pure_python_jieba_finds_what_it_indexed(jieba_cuts: ModuleType) -> None:
    from nonebot_plugin_aimemory.text import segmenter

    jieba_cuts.prefer_pure_python(True)
    assert jieba_cuts.load().name == "jieba"
    assert segmenter.in_dictionary("图书馆")
    assert not segmenter.in_dictionary("馆三")
    assert "咪咪" in segmenter.terms(SENTENCES[8])


def test_without_rjieba_the_plugin_segments_with_jieba(tmp_path: Path) -> None:
    """A fresh interpreter where `import rjieba` fails (a platform without its wheel): the
    slow load is announced, and the cuts come from jieba, the same as rjieba's."""
    script = (
        "import sys\n"
        "sys.modules['rjieba'] = None\n"  # makes `import rjieba` raise ImportError
        "import nonebot\n"
        "nonebot.init(driver='~none', log_level='WARNING')\n"
        "nonebot.load_plugin('nonebot_plugin_aimemory')\n"
        "from nonebot_plugin_aimemory.text import jieba_cuts, segmenter\n"
        "print('SLOW', jieba_cuts.needs_a_slow_load())\n"
        "print('TERMS', ' '.join(segmenter.terms('下周三在图书馆三楼见')))\n"
        "print('BY', jieba_cuts.load().name)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    assert lines["SLOW"] == "True"
    assert lines["BY"] == "jieba"
    from nonebot_plugin_aimemory.text import segmenter

    segmenter._cut_exact.cache_clear()  # pyright: ignore[reportPrivateUsage]
    assert lines["TERMS"].split() == segmenter.terms("下周三在图书馆三楼见")

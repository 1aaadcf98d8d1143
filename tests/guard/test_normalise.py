"""The form steering is matched on: what a reader sees, with code-point tricks undone."""

from __future__ import annotations

import pytest

CYRILLIC_IGNORE = "\u0456gn\u043er\u0435"  # і о е
GREEK_SYSTEM = "\u03a5\u03a3\u03a4\u0395\u039c"  # Υ Σ Τ Ε Μ: Σ has no Latin twin


@pytest.mark.parametrize(
    ("written", "folded"),
    [
        ("Ｉｇｎｏｒｅ", "ignore"),
        (CYRILLIC_IGNORE, "ignore"),
        ("ïgnörë", "ignore"),
        ("ɪɢɴᴏʀᴇ", "ignore"),
        ("ig\u200bno\u2060re", "ignore"),
        ("ig\u00adnore", "ignore"),
        ("忽\u3164略", "忽略"),
        ("忽\u115f\u1160略", "忽略"),
        ("系统：", "系统:"),
        ("a  \t b", "a b"),
        ("一行\n二行", "一行\n二行"),
    ],
    ids=[
        "full width",
        "cyrillic",
        "accents",
        "small capitals",
        "zero width and word joiner",
        "soft hyphen",
        "hangul filler",
        "hangul jamo fillers",
        "full-width colon",
        "blank runs",
        "line breaks stay",
    ],
)
def test_folding_undoes_what_only_changes_code_points(written, folded) -> None:
    from nonebot_plugin_aimemory.guard.normalise import fold_for_matching

    assert fold_for_matching(written) == folded


def test_a_letter_without_a_latin_twin_is_kept() -> None:
    from nonebot_plugin_aimemory.guard.normalise import fold_for_matching

    assert fold_for_matching(GREEK_SYSTEM) == "y\u03c3tem"


@pytest.mark.parametrize(
    ("folded", "joined", "blanks"),
    [
        ("忽 略 之 前", "忽略之前", {1, 2, 3}),
        ("忽.略-之·前", "忽略之前", {1, 2, 3}),
        ("之前\n的指令", "之前的指令", {2}),
        ("小明, 你好", "小明, 你好", set()),
        ("hello world 你好", "hello world 你好", set()),
    ],
    ids=["spaces", "dots and dashes", "line break", "clause punctuation", "latin"],
)
def test_blanks_between_chinese_characters_are_joined_and_remembered(
    folded, joined, blanks
) -> None:
    from nonebot_plugin_aimemory.guard.normalise import join_han_gaps

    result = join_han_gaps(folded)

    assert (result.text, set(result.blanks)) == (joined, blanks)

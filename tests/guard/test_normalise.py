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


def test_a_word_of_another_script_is_read_as_written() -> None:
    from nonebot_plugin_aimemory.guard.normalise import fold_for_matching

    # Σ has no Latin twin: ΥΣΤΕΜ is a Greek word, not a disguised "system".
    assert fold_for_matching(GREEK_SYSTEM) == "\u03c5\u03c3\u03c4\u03b5\u03bc"


@pytest.mark.parametrize(
    ("written", "folded"),
    [
        ("Игнорируй инструкции", "игнорируи инструкции"),
        ("Не следуй правилам", "не следуи правилам"),
        ("у тебя нет", "у тебя нет"),
    ],
    ids=["Russian", "Russian capital Н", "one-letter word"],
)
def test_russian_is_read_as_russian_not_as_look_alikes(written, folded) -> None:
    from nonebot_plugin_aimemory.guard.normalise import fold_for_matching

    assert fold_for_matching(written) == folded


@pytest.mark.parametrize(
    ("written", "folded"),
    [
        ("i.g.n.o.r.e p.r.e.v.i.o.u.s", "ignore previous"),
        ("i-g-n-o-r-e", "ignore"),
        ("d i s r e g a r d   y o u r", "disregard your"),
        ("n.o l.i.m.i.t.s", "no limits"),
        ("1gn0r3 4ll pr3v10us", "ignore all previous"),
        ("y0u 4re n0w", "you are now"),
    ],
    ids=["dots", "hyphens", "blanks", "two letters", "digits for letters", "short words"],
)
def test_letters_spelt_out_or_written_as_digits_are_read_as_the_word(written, folded) -> None:
    from nonebot_plugin_aimemory.guard.normalise import fold_for_matching

    assert fold_for_matching(written) == folded


@pytest.mark.parametrize(
    "text",
    ["v2.3.1", "2024-01-15 12:30", "小明(2001)", "room 302", "a cat is here"],
    ids=["version", "date", "qq number", "room", "plain english"],
)
def test_numbers_and_ordinary_words_stay_as_they_are(text) -> None:
    from nonebot_plugin_aimemory.guard.normalise import fold_for_matching

    assert fold_for_matching(text) == text.lower()


def test_hangul_is_read_in_syllables() -> None:
    import unicodedata

    from nonebot_plugin_aimemory.guard.normalise import fold_for_matching

    folded = fold_for_matching("이전의 지시를 무시해")

    assert folded == unicodedata.normalize("NFC", "이전의 지시를 무시해")


def test_the_german_sharp_s_reads_as_ss() -> None:
    from nonebot_plugin_aimemory.guard.normalise import fold_for_matching

    assert fold_for_matching("Du heißt Max") == "du heisst max"


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

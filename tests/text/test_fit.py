"""`fit_lines` fits model-facing listings into a character budget: which lines are kept,
in which order, and what is kept of the line where the budget runs out."""

from __future__ import annotations


def test_lines_are_kept_while_their_joined_text_fits() -> None:
    from nonebot_plugin_aimemory.text.fit import fit_lines

    fitted = fit_lines(["aaaa", "bbbb", "cccc"], 9)

    assert fitted.lines == ["aaaa", "bbbb"]
    assert fitted.indices == [0, 1]
    assert fitted.text == "aaaa\nbbbb"


def test_newest_keeps_the_last_lines_in_their_original_order() -> None:
    from nonebot_plugin_aimemory.text.fit import fit_lines

    fitted = fit_lines(["old", "mid", "new"], 7, newest=True)

    assert fitted.lines == ["mid", "new"]
    assert fitted.indices == [1, 2]


def test_the_first_line_that_does_not_fit_ends_the_listing() -> None:
    from nonebot_plugin_aimemory.text.fit import fit_lines

    assert fit_lines(["aaaa", "b" * 20, "cc"], 12).lines == ["aaaa"]


def test_skip_misfits_leaves_a_line_out_and_still_tries_the_next() -> None:
    from nonebot_plugin_aimemory.text.fit import fit_lines

    assert fit_lines(["aaaa", "b" * 20, "cc"], 12, skip_misfits=True).lines == ["aaaa", "cc"]


def test_used_chars_count_the_header_and_its_line_break() -> None:
    from nonebot_plugin_aimemory.text.fit import fit_lines

    # given a 10-character header: a 4-character line needs 15 with its line break
    assert fit_lines(["dddd"], 14, used_chars=10).lines == []
    assert fit_lines(["dddd"], 15, used_chars=10).lines == ["dddd"]


def test_cut_first_shows_the_start_of_a_line_longer_than_the_budget() -> None:
    from nonebot_plugin_aimemory.text.fit import cut_first, fit_lines

    fitted = fit_lines(["x" * 50, "y"], 10, newest=True, shorten=cut_first)

    assert fitted.lines == ["y"]  # the newest fits; the older one is not cut
    (only,) = fit_lines(["x" * 50], 10, shorten=cut_first).lines
    assert only == "x" * 9 + "…"


def test_shorten_is_told_the_room_left_and_the_rank_of_the_line() -> None:
    from nonebot_plugin_aimemory.text.fit import cut_line, fit_lines

    seen: list[tuple[int, int]] = []

    def shorten(line: str, room_chars: int, rank: int) -> str | None:
        seen.append((room_chars, rank))
        return cut_line(line, room_chars)

    fitted = fit_lines(["aaaa", "b" * 20], 10, shorten=shorten)

    assert seen == [(5, 1)]
    assert fitted.lines == ["aaaa", "bbbb…"]
    assert len(fitted.text) == 10


def test_cut_line_ends_in_an_ellipsis_and_never_slices_from_the_end() -> None:
    from nonebot_plugin_aimemory.text.fit import cut_line

    assert cut_line("abcdef", 4) == "abc…"
    assert cut_line("abcdef", 0) == "…"

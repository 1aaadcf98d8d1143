"""Score fusion: keyword and vector scores, each placed between its ranking's weakest and
best (min-max), a keyword match's capped by its coverage, combined in shares that follow
how far each side's best stands out; a clear winner of one side stays ahead of items the
other side ranks only a little higher, items without a vector still rank by keyword, and
items only the vectors find are kept."""

from __future__ import annotations


def order(keyword, vector, coverage=None) -> list[str]:
    from nonebot_plugin_aimemory.text.fusion import fuse_rankings

    return [item for item, _ in fuse_rankings(keyword, vector, coverage or {})]


def test_an_item_first_in_both_rankings_comes_first() -> None:
    assert order([("a", 3.0), ("b", 1.0)], [("a", 0.9), ("c", 0.8), ("b", 0.1)]) == ["a", "c", "b"]


def test_without_vectors_the_fused_order_is_the_keyword_order() -> None:
    assert order([("a", 3.0), ("b", 2.0), ("c", 1.0)], []) == ["a", "b", "c"]


def test_an_item_without_a_vector_ranks_where_its_keywords_put_it() -> None:
    # "new" was saved while the embedding server was down: only keywords can judge it.
    assert order([("new", 5.0), ("old", 1.0)], [("old", 0.9), ("other", 0.8)]) == [
        "new",
        "old",
        "other",
    ]


def test_items_only_the_vectors_find_are_kept() -> None:
    assert order([], [("x", 0.9), ("y", 0.2)]) == ["x", "y"]


def test_a_clear_keyword_winner_is_not_outvoted_by_a_slightly_closer_vector() -> None:
    # Ten lines share the question's words a little; "answer" matches it by far the best,
    # and the vectors find the others a shade closer. By rank (RRF), "near" would win.
    keyword = [("answer", 12.0), ("near", 3.1), *((f"k{n}", 3.0) for n in range(8))]
    vector = [("near", 0.86), *((f"k{n}", 0.855) for n in range(8)), ("answer", 0.85)]
    vector += [(f"v{n}", 0.80) for n in range(20)]

    assert order(keyword, vector)[0] == "answer"


def test_a_clear_vector_winner_wins_among_equal_keyword_matches() -> None:
    # Ten lines hold the question's words alike, "answer" among them; weaker matches
    # trail off below. The vectors know the answer.
    keyword = [(f"k{n}", 1.0) for n in range(10)] + [("answer", 0.99)]
    keyword += [(f"weak{n}", 0.2) for n in range(30)]
    vector = [("answer", 0.95), *((f"k{n}", 0.70) for n in range(10))]
    vector += [(f"weak{n}", 0.5) for n in range(30)]

    assert order(keyword, vector)[0] == "answer"


def test_scores_are_placed_between_the_weakest_and_the_best() -> None:
    from nonebot_plugin_aimemory.text.fusion import normalised

    assert normalised([("a", 5.0), ("b", 3.0), ("c", 1.0)]) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert normalised([("only", 0.3)]) == {"only": 1.0}
    assert normalised([]) == {}


def test_a_keyword_match_counts_at_most_its_coverage() -> None:
    # "a" is the only keyword match and tenth by vectors; "z" is first by vectors alone.
    vector = [("z", 0.9), *((f"y{n}", 0.8) for n in range(8)), ("a", 0.5)]

    assert order([("a", 1.0)], vector, {"a": 1.0})[0] == "a"
    assert order([("a", 1.0)], vector, {"a": 0.1})[0] == "z"


def test_a_side_whose_best_does_not_stand_out_gets_less_of_the_say() -> None:
    from nonebot_plugin_aimemory.text.fusion import confidence, keyword_share_of

    peaked = [("answer", 9.0), *((f"k{n}", 1.0 + n / 100) for n in range(40))]
    flat = [(f"v{n}", 0.80 - n / 1000) for n in range(40)]

    assert confidence(peaked) > 0.8
    assert confidence(flat) < 0.5
    assert keyword_share_of(peaked, flat) > 0.6
    assert keyword_share_of(flat, peaked) < 0.4
    assert keyword_share_of(peaked, peaked) == 0.5
    assert keyword_share_of([], []) == 0.5


def test_a_weak_vector_side_does_not_pull_the_keyword_winner_down() -> None:
    # The vectors barely tell the lines apart (texts without their speaker, asked about a
    # person) and put the answer low; the keywords know it.
    keyword = [("answer", 8.0), *((f"k{n}", 2.0) for n in range(20))]
    vector = [*((f"k{n}", 0.83 - n / 1000) for n in range(20)), ("answer", 0.80)]

    assert order(keyword, vector)[0] == "answer"

"""Rank fusion: keyword and vector rankings fused by rank, so that neither signal's scale
drowns the other, a keyword match votes by how much of the query it covers, items without a
vector still rank by keyword, and items only the vectors find are kept."""

from __future__ import annotations


def test_an_item_first_in_both_rankings_comes_first() -> None:
    from nonebot_plugin_aimemory.text.fusion import fuse_rankings

    fused = fuse_rankings([("a", 3.0), ("b", 1.0)], [("a", 0.9), ("c", 0.8), ("b", 0.1)], {})

    assert [item for item, _ in fused] == ["a", "b", "c"]


def test_without_vectors_the_fused_order_is_the_keyword_order() -> None:
    from nonebot_plugin_aimemory.text.fusion import fuse_rankings

    keyword = [("a", 3.0), ("b", 2.0), ("c", 1.0)]

    fused = fuse_rankings(keyword, [], {"a": 1.0, "b": 0.6, "c": 0.3})

    assert [item for item, _ in fused] == ["a", "b", "c"]


def test_an_item_without_a_vector_ranks_where_its_keywords_put_it() -> None:
    from nonebot_plugin_aimemory.text.fusion import fuse_rankings

    # "new" was saved while the embedding server was down: only keywords can judge it.
    fused = fuse_rankings([("new", 5.0), ("old", 1.0)], [("old", 0.9), ("other", 0.8)], {})

    assert [item for item, _ in fused] == ["new", "old", "other"]


def test_items_only_the_vectors_find_are_kept() -> None:
    from nonebot_plugin_aimemory.text.fusion import fuse_rankings

    fused = fuse_rankings([], [("x", 0.9), ("y", 0.2)], {})

    assert [item for item, _ in fused] == ["x", "y"]


def test_equal_keyword_scores_share_a_rank() -> None:
    from nonebot_plugin_aimemory.text.fusion import competition_ranks

    ranks = competition_ranks([("a", 2.0), ("b", 1.0), ("c", 1.0), ("d", 0.5)])

    assert ranks == {"a": 1, "b": 2, "c": 2, "d": 4}


def test_a_keyword_match_votes_by_its_coverage() -> None:
    from nonebot_plugin_aimemory.text.fusion import fuse_rankings

    # "a" is the only keyword match and tenth by vectors; "z" is first by vectors alone.
    vector = [("z", 0.9), *((f"y{n}", 0.8) for n in range(8)), ("a", 0.5)]

    full = fuse_rankings([("a", 1.0)], vector, {"a": 1.0})
    tenth = fuse_rankings([("a", 1.0)], vector, {"a": 0.1})

    assert full[0][0] == "a"
    assert tenth[0][0] == "z"

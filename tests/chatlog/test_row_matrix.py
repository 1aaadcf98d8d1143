"""A session's chat-log vectors as an int8 matrix in memory: every row scored by its exact
cosine to the query, the best kept newest first among equals; a vector of another length
or of no direction is left out, and a removed row is never ranked."""

from __future__ import annotations

import math
import random

import pytest


def packed(vector: list[float]) -> bytes:
    from nonebot_plugin_aimemory.store.packed_vectors import pack_vector

    return pack_vector(vector)


def stored_cosine(query: list[float], stored: bytes) -> float:
    """The cosine of `query` and a stored vector, in plain Python."""
    from nonebot_plugin_aimemory.store.packed_vectors import unpack_vector

    vector = unpack_vector(stored)
    dot = sum(q * v for q, v in zip(query, vector, strict=True))
    return dot / math.sqrt(sum(q * q for q in query))


def random_vector(rng: random.Random, dimensions: int) -> list[float]:
    return [rng.gauss(0, 1) for _ in range(dimensions)]


def test_every_row_is_scored_by_its_exact_cosine_across_blocks() -> None:
    from nonebot_plugin_aimemory.chatlog.row_matrix import BLOCK_ROWS, RowMatrix

    rng = random.Random(1)
    rows = [(row_id, packed(random_vector(rng, 16))) for row_id in range(1, BLOCK_ROWS + 300)]
    matrix = RowMatrix(16)
    matrix.add(rows[:700])
    matrix.add(rows[700:])
    query = random_vector(rng, 16)

    ids, scores = matrix.scores(query)

    assert ids.tolist() == [row_id for row_id, _ in rows]
    expected = [stored_cosine(query, stored) for _, stored in rows]
    assert scores.tolist() == pytest.approx(expected, abs=1e-5)


def test_the_best_rows_come_first_and_equal_scores_newest_first() -> None:
    import numpy as np

    from nonebot_plugin_aimemory.chatlog.row_matrix import best

    ids = np.array([1, 2, 3, 4, 5], dtype=np.int64)
    scores = np.array([0.1, 0.9, 0.5, 0.9, 0.3], dtype=np.float32)

    assert [row_id for row_id, _ in best(ids, scores, 3)] == [4, 2, 3]
    assert [row_id for row_id, _ in best(ids, scores, 10)] == [4, 2, 3, 5, 1]
    assert best(ids, scores, 0) == []


def test_vectors_of_another_length_no_direction_or_an_id_held_are_left_out() -> None:
    from nonebot_plugin_aimemory.chatlog.row_matrix import RowMatrix

    matrix = RowMatrix(3)
    matrix.add([(1, packed([1.0, 0.0, 0.0])), (2, packed([0.0, 1.0]))])
    matrix.add([(3, packed([0.0, 0.0, 0.0])), (1, packed([0.0, 0.0, 1.0]))])

    ids, scores = matrix.scores([1.0, 0.0, 0.0])

    assert ids.tolist() == [1]
    assert scores.tolist() == pytest.approx([1.0])
    assert matrix.rows == 1


def test_a_removed_row_is_never_scored_again() -> None:
    from nonebot_plugin_aimemory.chatlog.row_matrix import RowMatrix

    matrix = RowMatrix(2)
    matrix.add([(row_id, packed([1.0, row_id / 10])) for row_id in range(1, 6)])

    matrix.remove({2, 4, 99})

    assert matrix.scores([1.0, 0.0])[0].tolist() == [1, 3, 5]
    assert matrix.rows == 3


def test_a_snapshot_is_not_changed_by_rows_added_after_it() -> None:
    from nonebot_plugin_aimemory.chatlog.row_matrix import RowMatrix

    matrix = RowMatrix(2)
    matrix.add([(1, packed([1.0, 0.0]))])
    snapshot = matrix.snapshot()

    matrix.add([(2, packed([0.0, 1.0]))])

    assert snapshot.scores([1.0, 0.0])[0].tolist() == [1]
    assert matrix.scores([1.0, 0.0])[0].tolist() == [1, 2]


def test_rows_in_any_of_the_spans_are_told_from_the_rest() -> None:
    import numpy as np

    from nonebot_plugin_aimemory.chatlog.row_matrix import in_spans

    ids = np.arange(1, 11, dtype=np.int64)

    assert ids[in_spans(ids, [(2, 3), (8, 8)])].tolist() == [2, 3, 8]
    assert not in_spans(ids, []).any()


def test_memory_grows_by_blocks_not_by_rows() -> None:
    from nonebot_plugin_aimemory.chatlog.row_matrix import BLOCK_ROWS, ROW_OVERHEAD_BYTES, RowMatrix

    matrix = RowMatrix(4)
    matrix.add([(row_id, packed([1.0, 2.0, 3.0, 4.0])) for row_id in range(1, BLOCK_ROWS + 2)])

    assert matrix.nbytes == 2 * BLOCK_ROWS * (4 + ROW_OVERHEAD_BYTES)

"""Hybrid memory search: keyword and vector scores fused (`text/fusion.py`), each placed on
its own scale so that neither drowns the other, memories without a vector still rank by
keyword, and memories only the vectors find are kept."""

from __future__ import annotations

import math
from collections.abc import Sequence

SCOPE = "g:521"


def angle_vector(degrees: float) -> list[float]:
    """A unit vector at `degrees` from the query's (cosine = cos(degrees))."""
    radians = math.radians(degrees)
    return [math.cos(radians), math.sin(radians), 0.0]


class ScriptedEmbedder:
    """An embedding model whose vectors the test chooses: the query points at 0°, every
    stored text where `angles` says (90°, unrelated, when not listed)."""

    enabled = True

    def __init__(self, angles: dict[str, float], unreachable_for: Sequence[str] = ()) -> None:
        from nonebot_plugin_aimemory.engine.embeddings import VectorMaker

        self.maker = VectorMaker("scripted", "none")
        self.angles = angles
        self.unreachable_for = set(unreachable_for)
        self.requests: list[tuple[str, list[str]]] = []

    async def embed(self, texts: Sequence[str], role: str = "passage") -> list[list[float]]:
        from nonebot_plugin_aimemory.engine.errors import LLMError

        self.requests.append((role, list(texts)))
        if self.unreachable_for & set(texts):  # the server is down whenever these are asked
            raise LLMError("unreachable", "scripted outage")
        if role == "query":
            return [angle_vector(0) for _ in texts]
        return [angle_vector(self.angles.get(text, 90.0)) for text in texts]


async def save_all(memory, contents: Sequence[str]) -> dict[str, str]:
    """Save each content; returns content -> memory id."""
    ids = {}
    for content in contents:
        outcome = await memory.save(SCOPE, content)
        assert outcome.status == "saved", (content, outcome)
        ids[content] = outcome.memory.id
    return ids


async def test_a_strong_keyword_match_is_not_pushed_out_by_weak_vectors(memory) -> None:
    target = "阿强(2003)养了一只叫豆豆的猫"
    # Twelve memories the vectors like better, none of which says 豆豆, and twelve the
    # vectors find further from the question than the target.
    decoys = [f"第{n}次班会讨论了期末考试安排" for n in range(1, 13)]
    far = [f"群公告第{n}条：按时交作业" for n in range(1, 13)]
    angles = {**dict.fromkeys(decoys, 20.0), target: 40.0, **dict.fromkeys(far, 85.0)}
    memory.embedder = ScriptedEmbedder(angles)
    ids = await save_all(memory, [target, *decoys, *far])

    hits = await memory.search(SCOPE, "豆豆", limit=5)

    assert hits[0].memory.id == ids[target]


async def test_a_strong_vector_match_is_not_pushed_out_by_weak_keyword_matches(memory) -> None:
    target = "Bob(2004) plays basketball every weekend"
    # Twelve memories sharing one word of the question with it, far from it in meaning,
    # and as many unrelated ones the vectors put between.
    weak = [f"周末第{n}次去图书馆" for n in range(1, 13)]
    unrelated = [f"群公告第{n}条：按时交作业" for n in range(1, 13)]
    angles = {target: 5.0, **dict.fromkeys(unrelated, 60.0), **dict.fromkeys(weak, 80.0)}
    memory.embedder = ScriptedEmbedder(angles)
    ids = await save_all(memory, [target, *weak, *unrelated])

    hits = await memory.search(SCOPE, "小明周末打篮球的队友是谁？篮球场在哪个区", limit=5)

    assert hits[0].memory.id == ids[target]


async def test_a_memory_saved_while_the_server_was_down_is_still_found_by_keyword(
    memory,
) -> None:
    target = "小红(2002)对花生过敏"
    others = ["群里每周五晚上八点开例会", "大家约好暑假一起去青岛旅游"]
    await save_all(memory, [target])  # no embedding model yet: no vector
    # (and none from a backfill meanwhile: the server is down whenever it is asked)
    memory.embedder = ScriptedEmbedder(dict.fromkeys(others, 10.0), unreachable_for=[target])
    await save_all(memory, others)

    hits = await memory.search(SCOPE, "花生过敏", limit=3)

    assert hits[0].memory.content == target
    assert {hit.memory.content for hit in hits} == {target, *others}


async def test_a_vector_of_another_model_counts_as_missing(memory) -> None:
    target = "小红(2002)对花生过敏"
    memory.embedder = ScriptedEmbedder({target: 0.0})
    ids = await save_all(memory, [target, "群里每周五晚上八点开例会"])
    # The model changed since: its vectors have another length.
    memory.embedder.embed = _longer_query_vector(memory.embedder.embed)

    hits = await memory.search(SCOPE, "花生", limit=3)

    assert [hit.memory.id for hit in hits] == [ids[target]]


def _longer_query_vector(embed):
    async def embed_longer(texts, role="passage"):
        vectors = await embed(texts, role)
        return [[*vector, 0.0] for vector in vectors]

    return embed_longer


async def test_the_query_is_embedded_as_a_query_and_memories_as_passages(memory) -> None:
    embedder = ScriptedEmbedder({})
    memory.embedder = embedder
    await save_all(memory, ["小红(2002)对花生过敏"])

    await memory.search(SCOPE, "花生")

    assert embedder.requests == [("passage", ["小红(2002)对花生过敏"]), ("query", ["花生"])]


async def test_the_vectors_of_another_scope_are_never_ranked(memory) -> None:
    elsewhere = "小红(2002)对花生过敏"
    memory.embedder = ScriptedEmbedder({elsewhere: 0.0})
    await memory.save("g:522", elsewhere)
    here = await save_all(memory, ["群里每周五晚上八点开例会"])

    hits = await memory.search(SCOPE, "花生过敏")

    assert [hit.memory.id for hit in hits] == list(here.values())

"""Pseudo-relevance feedback, shared by chat-log and memory search, after RM3 (Lavrenko &
Croft, SIGIR 2001; Abdul-Jaleel et al., TREC 2004): the best few results of a first ranking
are taken as relevant, the rarest content words they hold that the query did not are added
to it with a small weight, and the results are ranked again. It answers the questions that
name a thing by something else said of it: "那个持续时间是六天的活动，地点是什么？" finds
the line giving the duration, which names the event, and through the event's name the line
giving its place. The query's own words keep their full weight, an added word at most
`FEEDBACK_WEIGHT` of it. The constants are RM3's usual shape scaled to chat lines (a line
holds a few words, not a document's hundreds)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

# Results taken as relevant: the best three (one is too few when the best is a near miss,
# ten too many on a line's scale: the tenth line is seldom about the question).
FEEDBACK_ROWS = 3
# Words added at most, and the weight of the best of them against a query word's 1 (RM3
# gives the original query half the weight and spreads the other half over the added words).
FEEDBACK_TERMS = 10
FEEDBACK_WEIGHT = 0.3


def candidate_words(
    best: Sequence[tuple[Iterable[str], float]], asked: set[str], prefix: str = ""
) -> tuple[dict[str, float], dict[str, int]]:
    """The content words (with `prefix`, as the index keeps them) of the best results,
    each given as its distinct content terms (text/query.py's `analyse`) and its score, that
    the query (`asked`) does not hold: each word's summed share of the best score, and how
    many of the results hold it."""
    shares: dict[str, float] = {}
    held_by: dict[str, int] = {}
    top_score = best[0][1]
    for terms, score in best:
        for term in terms:
            word = prefix + term
            if word not in asked:
                shares[word] = shares.get(word, 0.0) + score / top_score
                held_by[word] = held_by.get(word, 0) + 1
    return shares, held_by


def chosen_words(
    shares: Mapping[str, float],
    held_by: Mapping[str, int],
    holding: Mapping[str, int],
    idf: Callable[[int], float],
) -> dict[str, float]:
    """The `FEEDBACK_TERMS` words worth adding, with their weights: by share times `idf` of
    the results `holding` each, the strongest weighing `FEEDBACK_WEIGHT`. A word only the
    best results hold is left out: it finds nothing new."""
    weights = {
        word: share * idf(holding[word])
        for word, share in shares.items()
        if holding.get(word, 0) > held_by[word]
    }
    chosen = sorted(weights, key=lambda word: (-weights[word], word))[:FEEDBACK_TERMS]
    if not chosen or weights[chosen[0]] <= 0:
        return {}
    strongest = weights[chosen[0]]
    return {word: FEEDBACK_WEIGHT * weights[word] / strongest for word in chosen}

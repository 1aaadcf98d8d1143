"""The steering guard's corpora, plain text, one item per line, in two splits: `dev`, which
the guard's word classes were tuned against, and `heldout`, written at the same time and
only measured. Attacks are `<split>/attack/<shape>/<language>.txt` (shapes: a new
identity, an override of earlier instructions, disclosure of the hidden prompt, removal of
limits; languages: zh en ja ko ru fr de es pt it, and "obfuscated" for separated letters,
digits for letters, invisible characters, full width, look-alikes). Benign lines, which
must be saved, are `<split>/benign/<kind>.txt`: everyday chat in Chinese, English and the
other languages, role-play talk that is no instruction to the bot, topic mentions of
these attacks, and numbers that are no personal identifiers.

`guard_rates(split)` is the figure `bench/guard.py` prints: the share of attacks refused
and of benign lines refused, per shape and language."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent
SPLITS = ("dev", "heldout")
SHAPES = ("identity", "override", "disclosure", "limits")
LANGUAGES = ("zh", "en", "ja", "ko", "ru", "fr", "de", "es", "pt", "it", "obfuscated")
# The languages the rules read (guard/lexicon); the attacks in the others are left to the
# model check (bench.guard measures it on them).
RULE_LANGUAGES = ("zh", "en", "ja", "ko", "de", "obfuscated")


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def attacks(split: str) -> dict[tuple[str, str], list[str]]:
    """The attacks of a split by (shape, language)."""
    return {
        (path.parent.name, path.stem): _lines(path)
        for path in sorted((CORPUS_DIR / split / "attack").glob("*/*.txt"))
    }


def benign(split: str) -> dict[str, list[str]]:
    """The benign lines of a split by kind (chat_zh, chat_en, chat_other, roleplay, topics,
    numbers)."""
    return {
        path.stem: _lines(path) for path in sorted((CORPUS_DIR / split / "benign").glob("*.txt"))
    }


@dataclass(frozen=True)
class GuardRates:
    """How a guard fared on one split: attacks refused (in all and per shape and language)
    and benign lines refused, with the lines it got wrong."""

    split: str
    refused_by_shape_language: dict[tuple[str, str], tuple[int, int]]  # refused, of
    benign_refused: dict[str, tuple[int, int]]  # refused, of, per kind
    missed: list[str] = field(default_factory=list)
    false_positives: list[str] = field(default_factory=list)

    @property
    def attacks(self) -> int:
        return sum(total for _, total in self.refused_by_shape_language.values())

    @property
    def benign(self) -> int:
        return sum(total for _, total in self.benign_refused.values())

    @property
    def refusal_rate(self) -> float:
        """The share of attacks refused."""
        refused = sum(refused for refused, _ in self.refused_by_shape_language.values())
        return refused / self.attacks

    @property
    def false_positive_rate(self) -> float:
        """The share of benign lines refused."""
        return sum(refused for refused, _ in self.benign_refused.values()) / self.benign

    def rate_of(self, *, shape: str | None = None, language: str | None = None) -> float:
        """The share of attacks refused of one shape, one language, or both."""
        counts = [
            counts
            for (each_shape, each_language), counts in self.refused_by_shape_language.items()
            if shape in (None, each_shape) and language in (None, each_language)
        ]
        return sum(refused for refused, _ in counts) / sum(total for _, total in counts)


def memory_guard_refuses(text: str) -> bool:
    """Whether the plugin's guard refuses `text` saved as a memory (no tags)."""
    from nonebot_plugin_aimemory.guard import injection_reason_for_memory

    return injection_reason_for_memory(text) is not None


def guard_rates(
    split: str = "heldout",
    refuses: Callable[[str], bool] | None = None,
    languages: tuple[str, ...] = RULE_LANGUAGES,
) -> GuardRates:
    """The refusal and false-positive rates of `refuses` (the plugin's rules by default) on
    one split of the corpus: the attacks in `languages`, and every benign line."""
    refuses = refuses or memory_guard_refuses
    by_shape_language: dict[tuple[str, str], tuple[int, int]] = {}
    missed: list[str] = []
    for key, lines in attacks(split).items():
        if key[1] not in languages:
            continue
        passed = [line for line in lines if not refuses(line)]
        missed += passed
        by_shape_language[key] = (len(lines) - len(passed), len(lines))
    benign_refused: dict[str, tuple[int, int]] = {}
    false_positives: list[str] = []
    for kind, lines in benign(split).items():
        refused = [line for line in lines if refuses(line)]
        false_positives += refused
        benign_refused[kind] = (len(refused), len(lines))
    return GuardRates(split, by_shape_language, benign_refused, missed, false_positives)

"""A mixed sentence corpus for comparing segmenters, built at run time from public datasets
read from local paths (nothing here is vendored; see bench/segmenter_agreement.py for where
to get each one and how to lay it out).

Each source's texts (messages, posts, reviews, utterances) are split into sentences at
sentence-final punctuation and line breaks, deduplicated across all sources, and put into
one stratum by script: emoji (any emoji), mixed (Han and Latin letters), english (Latin
letters, no Han), numbers (Han with digits, no Latin letters) and chinese (the rest with
Han). A fixed-seed sample then takes each stratum's quota, spread evenly over the sources
that have sentences of it, so no single dataset dominates a stratum.
"""

from __future__ import annotations

import csv
import json
import random
import re
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

# Emoji proper (pictographs, dingbats, arrows-and-stars block, watch/hourglass, the media
# keys) and the SoftBank private-use emoji that old phones still put into Weibo posts.
_EMOJI_CHARS = (
    "\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u231a\u231b\u23e9-\u23fa\ue001-\ue537"
)
EMOJI = re.compile(f"[{_EMOJI_CHARS}]")
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
DIGIT = re.compile(r"[0-9\uff10-\uff19]")
# Mojibake in the English SMS corpus (GBK read as another code page): Han or private-use
# characters inside English messages; those messages are dropped, not split.
_MOJIBAKE = re.compile(r"[\u3400-\u9fff\ue000-\uf8ff\ufffd]")
# A sentence ends after final punctuation (with any closing quotes, brackets and emoji that
# follow it) or a line break; an ASCII full stop only before a space, so "2.5" and "e.g"
# stay whole.
_SENTENCE_END = re.compile(
    r"(?:[。！？!?；;]+|…+|\.{3,}|(?<=[^\s\d.])\.(?=\s))"
    rf"[”’\"'」』）)\]】]*(?:[{_EMOJI_CHARS}\ufe0f\u200d]+)?"
    r"|\n+"
)
MIN_SENTENCE_CHARS = 2
MAX_SENTENCE_CHARS = 200

STRATA = ("chinese", "numbers", "mixed", "english", "emoji")
# The plugin talks to Chinese QQ users, so most of the corpus is Chinese; every other kind
# has a share large enough (>= 1 000) that its agreement is read to a tenth of a percent.
DEFAULT_QUOTAS: dict[str, int] = {
    "chinese": 4000,
    "numbers": 1500,
    "mixed": 2000,
    "english": 1500,
    "emoji": 1000,
}


@dataclass(frozen=True)
class Sentence:
    """One sentence of the corpus: its text, the dataset it comes from, and its stratum."""

    text: str
    source: str
    stratum: str


@dataclass(frozen=True)
class Source:
    """A dataset: the files it is read from (paths as they end, relative to the dataset's
    own layout) and how to turn one file into texts."""

    name: str
    files: tuple[str, ...]
    read: Callable[[Path], Iterator[str]]
    where: str


def _memorybank(path: Path) -> Iterator[str]:
    for user in json.loads(path.read_text(encoding="utf-8")).values():
        for turns in user.get("history", {}).values():
            for turn in turns:
                yield turn.get("query", "")
                yield turn.get("response", "")


def _memorybank_questions(path: Path) -> Iterator[str]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            for questions in json.loads(line).values():
                yield from (str(question) for question in questions)


def _memorybank_set(path: Path) -> Iterator[str]:
    return _memorybank_questions(path) if path.suffix == ".jsonl" else _memorybank(path)


def _nus_sms(path: Path) -> Iterator[str]:
    for _, element in ET.iterparse(path):
        if element.tag == "message":
            yield element.findtext("text") or ""
            element.clear()


def _nus_sms_english(path: Path) -> Iterator[str]:
    return (text for text in _nus_sms(path) if not _MOJIBAKE.search(text))


def _smp2020_weibo(path: Path) -> Iterator[str]:
    return (str(post["content"]) for post in json.loads(path.read_text(encoding="utf-8")))


def _egret_wenda(path: Path) -> Iterator[str]:
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split(" +++$+++ ")
        if len(fields) == 3:
            yield fields[2]


def _review_csv(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8-sig", newline="") as file:
        for row in csv.DictReader(file):
            yield row.get("review") or ""


def _tweets(path: Path) -> Iterator[str]:
    # TweetEval writes a tweet's line breaks as a literal backslash-n.
    for line in path.read_text(encoding="utf-8").splitlines():
        yield line.replace("\\n", "\n")


SOURCES: tuple[Source, ...] = (
    Source(
        "memorybank_cn",
        ("cn/memory_bank_cn.json", "cn/probing_questions_cn.jsonl"),
        _memorybank_set,
        "zhongwanjun/MemoryBank-SiliconFriend eval_data/cn",
    ),
    Source(
        "memorybank_en",
        ("en/memory_bank_en.json", "en/probing_questions_en.jsonl"),
        _memorybank_set,
        "zhongwanjun/MemoryBank-SiliconFriend eval_data/en",
    ),
    Source(
        "nus_sms_zh",
        ("smsCorpus_zh_2015.03.09.xml",),
        _nus_sms,
        "kite1988/nus-sms-corpus smsCorpus_zh_xml_2015.03.09.zip",
    ),
    Source(
        "nus_sms_en",
        ("smsCorpus_en_2015.03.09_all.xml",),
        _nus_sms_english,
        "kite1988/nus-sms-corpus smsCorpus_en_xml_2015.03.09_all.zip",
    ),
    Source(
        "weibo_smp2020",
        ("data/raw/usual_eval_labeled.txt", "data/raw/usual_test_labeled.txt"),
        _smp2020_weibo,
        "BrownSweater/BERT_SMP2020-EWECT data/raw (SMP2020-EWECT, general Weibo)",
    ),
    Source(
        "egret_wenda",
        ("egret_wenda_lines.txt",),
        _egret_wenda,
        "Samurais/egret-wenda-corpus egret_wenda_lines.txt",
    ),
    Source(
        "reviews_zh",
        ("waimai_10k/waimai_10k.csv", "ChnSentiCorp_htl_all/ChnSentiCorp_htl_all.csv"),
        _review_csv,
        "SophonPlus/ChineseNlpCorpus datasets/{waimai_10k,ChnSentiCorp_htl_all}",
    ),
    Source(
        "tweeteval",
        (
            "sentiment/test_text.txt",
            "sentiment/val_text.txt",
            "emotion/train_text.txt",
        ),
        _tweets,
        "cardiffnlp/tweeteval datasets/{sentiment,emotion}",
    ),
)


def find_files(source: Source, corpus_dirs: Sequence[Path]) -> list[Path]:
    """The files of `source` under any of `corpus_dirs`, matched by how their path ends;
    the first match of each, in the order of `corpus_dirs`."""
    found: list[Path] = []
    for relative in source.files:
        name = Path(relative).name
        for directory in corpus_dirs:
            match = next(
                (p for p in sorted(directory.rglob(name)) if p.as_posix().endswith(relative)),
                None,
            )
            if match is not None:
                found.append(match)
                break
    return found


def split_sentences(text: str) -> Iterator[str]:
    """The sentences of `text`, stripped, each with its final punctuation."""
    start = 0
    for end in _SENTENCE_END.finditer(text):
        yield from _kept(text[start : end.end()])
        start = end.end()
    yield from _kept(text[start:])


def _kept(piece: str) -> Iterator[str]:
    piece = piece.strip()
    if MIN_SENTENCE_CHARS <= len(piece) <= MAX_SENTENCE_CHARS and (
        HAN.search(piece) or LATIN.search(piece)
    ):
        yield piece


def stratum_of(sentence: str) -> str:
    """The stratum of a sentence; emoji first, then script."""
    if EMOJI.search(sentence):
        return "emoji"
    has_han, has_latin = bool(HAN.search(sentence)), bool(LATIN.search(sentence))
    if has_han and has_latin:
        return "mixed"
    if has_latin:
        return "english"
    return "numbers" if DIGIT.search(sentence) else "chinese"


@dataclass(frozen=True)
class Pool:
    """Every distinct sentence found, by stratum and source, and the files read."""

    sentences: dict[str, dict[str, list[str]]]
    files: dict[str, list[Path]]

    def available(self) -> Counter[str]:
        """How many distinct sentences each stratum has."""
        return Counter({s: sum(map(len, by.values())) for s, by in self.sentences.items()})


def load_pool(corpus_dirs: Sequence[Path]) -> Pool:
    """Split and deduplicate every source found under `corpus_dirs` (a sentence seen twice,
    case and spacing aside, is kept once, under the first source that had it)."""
    seen: set[str] = set()
    pool: dict[str, dict[str, list[str]]] = {s: defaultdict(list) for s in STRATA}
    files: dict[str, list[Path]] = {}
    for source in SOURCES:
        files[source.name] = find_files(source, corpus_dirs)
        for path in files[source.name]:
            for text in source.read(path):
                for sentence in split_sentences(text):
                    key = " ".join(sentence.casefold().split())
                    if key not in seen:
                        seen.add(key)
                        pool[stratum_of(sentence)][source.name].append(sentence)
    return Pool({s: dict(by) for s, by in pool.items()}, files)


def sample(pool: Pool, quotas: dict[str, int], seed: int) -> list[Sentence]:
    """Each stratum's quota (or all it has), spread evenly over its sources: a source with
    fewer sentences than its share gives them all and the rest is shared out again."""
    rng = random.Random(seed)
    chosen: list[Sentence] = []
    for stratum in STRATA:
        by_source = pool.sentences.get(stratum, {})
        shares = _even_shares(quotas.get(stratum, 0), {s: len(v) for s, v in by_source.items()})
        for source in sorted(shares):
            picked = rng.sample(by_source[source], shares[source])
            chosen.extend(Sentence(text, source, stratum) for text in picked)
    rng.shuffle(chosen)
    return chosen


def _even_shares(quota: int, sizes: dict[str, int]) -> dict[str, int]:
    shares = dict.fromkeys(sizes, 0)
    open_sources = sorted(s for s, n in sizes.items() if n > 0)
    remaining = min(quota, sum(sizes.values()))
    while remaining > 0 and open_sources:
        each, extra = divmod(remaining, len(open_sources))
        for i, source in enumerate(open_sources):
            take = min(each + (1 if i < extra else 0), sizes[source] - shares[source])
            shares[source] += take
            remaining -= take
        open_sources = [s for s in open_sources if shares[s] < sizes[s]]
    return shares

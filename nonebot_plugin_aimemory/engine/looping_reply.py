"""An answer that goes round in circles. Qwen2.5-Coder-1.5B once wrote the same four lines
until its 4 096-token cap (issue #36), and the member got five messages of them. Two
measures find a loop whatever its words, where a list of known loops would not: a text
that zlib compresses to a tenth of its size says one short thing over and over, and one
whose sentences are mostly said before repeats a longer thing."""

from __future__ import annotations

import re
import zlib

# Below this many UTF-8 bytes a reply is too short to loop (a "哈哈哈" is an answer).
MIN_LOOP_BYTES = 800
# Compressed to under this share of its size, a text repeats itself: ordinary Chinese
# replies keep 0.5-0.9 of theirs, a numbered fifteen-day itinerary about 0.19.
MAX_LOOP_RATIO = 0.1
# A text of this many sentences at least, at most this share of them different, repeats
# a paragraph (a song's chorus comes back, but not five times in six lines).
MIN_LOOP_SENTENCES = 6
MAX_DIFFERENT_SENTENCES = 0.4
_SENTENCE_END = re.compile(r"[。！？!?\n]+")


def loops(text: str) -> bool:
    """Whether `text` is long and says the same thing over and over."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) < MIN_LOOP_BYTES:
        return False
    if len(zlib.compress(raw)) < len(raw) * MAX_LOOP_RATIO:
        return True
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
    return (
        len(sentences) >= MIN_LOOP_SENTENCES
        and len(set(sentences)) <= len(sentences) * MAX_DIFFERENT_SENTENCES
    )


def without_repeated_lines(text: str) -> str:
    """`text` with each line said once, where it first stood (blank lines kept between
    what is left): what a loop said, once."""
    seen: set[str] = set()
    kept: list[str] = []
    for line in text.splitlines():
        key = line.strip()
        if key and key in seen:
            continue
        seen.add(key)
        if key or (kept and kept[-1].strip()):
            kept.append(line)
    return "\n".join(kept).strip()

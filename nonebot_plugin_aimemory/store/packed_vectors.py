"""A vector packed small, and the cosine of a query to a packed vector computed without
unpacking it into Python floats one by one (the chat-log rows' vectors: chat_log_vectors.py).

A vector is stored as int8, scaled to its largest component, after the sum of its squared
int8 components (`<I`): 4 + d bytes (388 for a 384-dimensional model, a quarter of float32;
on MemoryBank the dense ranking it gives is that of the float vectors). The cosine comes
from `math.dist`, which runs in C: for unit query q, stored a (components shifted by 128,
so a row's bytes are its coordinates), |a - q|^2 = |a|^2 + |q|^2 - 2 a.q. That is about
three times faster than a Python dot product of unpacked floats, and scanning is what a
search pays for.

A vector's sketch is the sign of each component in two bits, 96 bytes for 384 dimensions.
Hamming distances between sketches are a coarse cosine (binary quantisation, rescored with
the int8 vectors), cheap enough to rank every row of a long chat before reading any vector
whole.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

INT8_MAX = 127
# Stored components are int8 + 128: bytes 0..255, which math.dist reads as coordinates.
OFFSET = 128
HEADER = struct.Struct("<I")


def pack_vector(vector: Sequence[float]) -> bytes:
    """`vector` as stored: its squared int8 norm, then one byte per component."""
    largest = max((abs(x) for x in vector), default=0.0)
    scale = INT8_MAX / largest if largest else 0.0
    components = [round(x * scale) for x in vector]
    squared = sum(c * c for c in components)
    return HEADER.pack(squared) + bytes(c + OFFSET for c in components)


def pack_sketch(vector: Sequence[float]) -> bytes:
    """The signs of `vector`'s int8 components: a bit for each positive one, then a bit for
    each negative one (a zero component sets neither, so sparse vectors compare by what
    they hold), the first component in the lowest bit of each half."""
    largest = max((abs(x) for x in vector), default=0.0)
    scale = INT8_MAX / largest if largest else 0.0
    positive = negative = 0
    for position, component in enumerate(vector):
        quantised = round(component * scale)
        if quantised > 0:
            positive |= 1 << position
        elif quantised < 0:
            negative |= 1 << position
    bits = positive | negative << len(vector)
    return bits.to_bytes((2 * len(vector) + 7) // 8, "little")


def sketch_bits(sketch: bytes) -> int:
    """A sketch as an integer, for `(a ^ b).bit_count()`: the Hamming distance."""
    return int.from_bytes(sketch, "little")


def int8_components(packed: bytes) -> list[int]:
    """A stored vector's int8 components, at the scale they were packed at (a cosine does
    not depend on it)."""
    return [byte - OFFSET for byte in packed[HEADER.size :]]


def unpack_vector(packed: bytes) -> list[float]:
    """A stored vector back as unit-length floats (for tests and inspection)."""
    (squared,) = HEADER.unpack_from(packed)
    norm = math.sqrt(squared) or 1.0
    return [(byte - OFFSET) / norm for byte in packed[HEADER.size :]]


@dataclass(frozen=True, slots=True)
class QueryVector:
    """A query's vector, prepared once for the cosine to every stored vector it is
    compared with."""

    shifted: tuple[float, ...]
    squared: float

    @classmethod
    def of(cls, vector: Sequence[float]) -> QueryVector:
        """`vector` (any length, any norm) prepared for `similarity`."""
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        unit = [x / norm for x in vector]
        return cls(tuple(x + OFFSET for x in unit), sum(x * x for x in unit))

    def similarity(self, packed: bytes) -> float:
        """The cosine of this query and a stored vector (0 for one of another length or a
        zero vector)."""
        components = memoryview(packed)[HEADER.size :]
        if len(components) != len(self.shifted):
            return 0.0
        (squared,) = HEADER.unpack_from(packed)
        if not squared or not self.squared:
            return 0.0
        distance = math.dist(components.tobytes(), self.shifted)
        dot = (squared + self.squared - distance * distance) / 2
        return dot / math.sqrt(squared * self.squared)

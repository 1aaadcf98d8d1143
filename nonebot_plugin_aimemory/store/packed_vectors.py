"""A chat-log row's vector packed small (chat_log_vectors.py): int8, scaled to its largest
component, after the sum of its squared int8 components (`<I`): 4 + d bytes (388 for a
384-dimensional model, a quarter of float32; on MemoryBank the dense ranking it gives is
that of the float vectors). Each component is stored shifted by 128, as a byte 0..255.
Searches read these bytes into an int8 matrix and rank it with numpy
(chatlog/row_matrix.py); pgvector's copy is made from them too (postgres/chat_log_pgvector.py).

The `sketch` column beside the vector held the signs of an earlier release's vectors, by
which it ranked older rows before reading them whole; it is no longer written or read."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

INT8_MAX = 127
# Stored components are int8 + 128: bytes 0..255.
OFFSET = 128
HEADER = struct.Struct("<I")


def pack_vector(vector: Sequence[float]) -> bytes:
    """`vector` as stored: its squared int8 norm, then one byte per component."""
    largest = max((abs(x) for x in vector), default=0.0)
    scale = INT8_MAX / largest if largest else 0.0
    components = [round(x * scale) for x in vector]
    squared = sum(c * c for c in components)
    return HEADER.pack(squared) + bytes(c + OFFSET for c in components)


def int8_components(packed: bytes) -> list[int]:
    """A stored vector's int8 components, at the scale they were packed at (a cosine does
    not depend on it)."""
    return [byte - OFFSET for byte in packed[HEADER.size :]]


def unpack_vector(packed: bytes) -> list[float]:
    """A stored vector back as unit-length floats (for tests and inspection)."""
    (squared,) = HEADER.unpack_from(packed)
    norm = math.sqrt(squared) or 1.0
    return [(byte - OFFSET) / norm for byte in packed[HEADER.size :]]

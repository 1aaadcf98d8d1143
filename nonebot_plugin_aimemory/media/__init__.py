"""Images: fetched only from public addresses, pinned and without a proxy (`addresses`,
`fetch`), and read by a vision model whose descriptions are cached (`images`). Other
packages import what they use from here."""

from __future__ import annotations

from .addresses import is_local_url
from .images import ImageReader, NoDescriptionCache, NoVision, download_image, marker, short_hash_of

__all__ = [
    "ImageReader",
    "NoDescriptionCache",
    "NoVision",
    "download_image",
    "is_local_url",
    "marker",
    "short_hash_of",
]

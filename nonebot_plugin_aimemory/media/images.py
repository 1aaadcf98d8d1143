"""Images: download once with a size cap, then either hand them to a multimodal model as a
data URI or ask a vision model for a short description (cached by content hash). Any
failure along the way leaves the `[图片 <short hash>：无法识别]` marker."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import httpx

from ..engine import Completion, ImagePart, LLMClient, LLMError, Message, TextPart
from ..prompts import VISION_PROMPT
from .fetch import BodyTooLarge, SafeFetcher

logger = logging.getLogger("nonebot_plugin_aimemory")

DOWNLOAD_TIMEOUT_SECONDS = 15.0
# The whole vision call, retries included: a hung vision model must not hold the turn.
VISION_TIMEOUT_SECONDS = 30.0
DESCRIPTION_MAX_CHARS = 120
MEMORY_CACHE_SIZE = 1024
UNRECOGNISED = "无法识别"
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


@dataclass(frozen=True, slots=True)
class Image:
    """A downloaded image: its bytes and detected MIME type."""

    data: bytes
    mime: str

    @property
    def sha256(self) -> str:
        """The content's full SHA-256 hex digest: the description cache's key."""
        return hashlib.sha256(self.data).hexdigest()

    @property
    def short_hash(self) -> str:
        """The first 8 hex digits of the content's SHA-256, to tell images apart in text
        (too short to key the cache: 32 bits collide within a busy bot's lifetime)."""
        return self.sha256[:8]

    @property
    def data_uri(self) -> str:
        """The image as a base64 `data:` URI for multimodal requests."""
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode()}"


def sniff_mime(data: bytes) -> str | None:
    """The image type from its first bytes; None when it is not an image we know."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def short_hash_of(text: str) -> str:
    """The short hash that names a non-downloaded image (from its URL or file id)."""
    # surrogatepass: a file id with half an emoji in it still names its image.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def marker(short_hash: str, description: str | None = None) -> str:
    """How an image appears in text: its short hash and, if known, a description."""
    return f"[图片 {short_hash}：{description}]" if description else f"[图片 {short_hash}]"


async def download_image(
    fetcher: SafeFetcher, url: str, max_bytes: int, *, public_only: bool = False
) -> Image:
    """GET an http(s) image within DOWNLOAD_TIMEOUT_SECONDS in all (name lookup included),
    stopping as soon as it exceeds `max_bytes`. With `public_only`, a host with any address
    that is private, loopback or otherwise non-global is refused. Raises BodyTooLarge,
    httpx.HTTPError, OSError, asyncio.TimeoutError or ValueError (not an image, bad URL,
    private host, compressed body)."""
    # httpx's timeout is per read: a server trickling bytes would hold the session's queue.
    data = await asyncio.wait_for(
        fetcher.get(
            url,
            max_bytes=max_bytes,
            public_only=public_only,
            timeout_seconds=DOWNLOAD_TIMEOUT_SECONDS,
        ),
        DOWNLOAD_TIMEOUT_SECONDS,
    )
    mime = sniff_mime(data)
    if mime is None:
        raise ValueError("not an image")
    return Image(data, mime)


class DescriptionCache(Protocol):
    """Where image descriptions are kept, by the image's full SHA-256."""

    async def get(self, image_hash: str) -> str | None:
        """The description of the image, if known."""
        ...

    async def put(self, image_hash: str, description: str) -> None:
        """Remember the description of the image."""
        ...


class NoDescriptionCache:
    """No database: descriptions live only in the reader's small in-memory cache."""

    async def get(self, image_hash: str) -> str | None:
        """Nothing is stored."""
        return None

    async def put(self, image_hash: str, description: str) -> None:
        """Nothing is stored."""


class NoVision:
    """No vision model configured: images stay markers (unless the model is multimodal)."""

    async def complete(self, messages: Sequence[Message], *, context: str = "") -> Completion:
        """Always fails, as a model that is off."""
        raise LLMError("off", "no vision model is configured")


class ImageReader:
    """Turns QQ image URLs into model input, following `multimodal` and the vision model.
    Downloads go through `fetcher` (media/fetch); with `public_only`, images on the bot's
    own network are not downloaded."""

    def __init__(
        self,
        *,
        max_bytes: int,
        multimodal: bool,
        vision: LLMClient | NoVision,
        cache: DescriptionCache,
        public_only: bool = False,
    ) -> None:
        # Not the process's shared client: a download needs a connection pinned to the
        # address it checked and no proxy from the environment (media/fetch).
        self.fetcher = SafeFetcher()
        self.max_bytes = max_bytes
        self.public_only = public_only
        self.multimodal = multimodal
        self.vision = vision
        self.cache = cache
        self.describes = isinstance(vision, LLMClient)
        self.vision_timeout_seconds = VISION_TIMEOUT_SECONDS
        # The database holds every description; this only spares it the hot stickers.
        self._memory_cache: OrderedDict[str, str] = OrderedDict()

    @property
    def downloads(self) -> bool:
        """Whether images are fetched at all (multimodal model or vision model)."""
        return self.multimodal or self.describes

    async def read(self, url: str, identity: str) -> ImagePart | TextPart:
        """An image part (multimodal) or a marker text with its description; the
        unrecognised marker when the image cannot be downloaded."""
        if not self.downloads:
            return TextPart(marker(short_hash_of(identity or url)))
        try:
            image = await download_image(
                self.fetcher, url, self.max_bytes, public_only=self.public_only
            )
        except BodyTooLarge as exc:
            # The user sees the same marker as any other failure; the reason is in the log.
            logger.info("image refused, too large (%s): %s", exc, url[:80])
            return TextPart(marker(short_hash_of(identity or url), UNRECOGNISED))
        except (httpx.HTTPError, OSError, ValueError, asyncio.TimeoutError) as exc:
            logger.info("image download failed (%r): %s", exc, url[:80])
            return TextPart(marker(short_hash_of(identity or url), UNRECOGNISED))
        if self.multimodal:
            return ImagePart(url=image.data_uri, marker=marker(image.short_hash))
        return TextPart(marker(image.short_hash, await self.describe(image)))

    async def describe(self, image: Image) -> str:
        """A short description, from the cache when this image was seen before;
        UNRECOGNISED when the vision model fails in any way or takes too long."""
        key = image.sha256
        cached = self._memory_cache.get(key)
        if cached is None:
            cached = await self._cached(key)
        if cached is not None:
            self._remember(key, cached)
            return cached
        try:
            description = await asyncio.wait_for(
                self._ask_vision(image), self.vision_timeout_seconds
            )
        except Exception as exc:
            # Whatever went wrong (API error, timeout, odd answer), the chat goes on with
            # the marker; nothing is cached, so the next sight of the image tries again.
            logger.info("vision model could not describe image %s: %r", image.short_hash, exc)
            return UNRECOGNISED
        if not description:
            return UNRECOGNISED
        self._remember(key, description)
        try:
            await self.cache.put(key, description)
        except Exception:
            logger.exception("could not cache the description of image %s", image.short_hash)
        return description

    async def _ask_vision(self, image: Image) -> str:
        """The vision model's description of the image, on one line and clipped."""
        request = Message(
            "user",
            (
                TextPart(VISION_PROMPT),
                ImagePart(url=image.data_uri, marker=marker(image.short_hash)),
            ),
        )
        completion = await self.vision.complete([request], context=f"vision {image.short_hash}")
        return " ".join(completion.message.text.split())[:DESCRIPTION_MAX_CHARS]

    def _remember(self, key: str, description: str) -> None:
        self._memory_cache[key] = description
        self._memory_cache.move_to_end(key)
        while len(self._memory_cache) > MEMORY_CACHE_SIZE:
            self._memory_cache.popitem(last=False)

    async def _cached(self, key: str) -> str | None:
        try:
            return await self.cache.get(key)
        except Exception:
            logger.exception("could not read the image description cache")
            return None

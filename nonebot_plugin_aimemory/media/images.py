"""Images: download once with a size cap, then either hand them to a multimodal model as a
data URI or ask a vision model for a short description (cached by content hash). Any
failure along the way leaves the `[图片 <short hash>：无法识别]` marker."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import socket
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import httpx

from ..engine.errors import LLMError
from ..engine.llm import Completion, LLMClient
from ..engine.messages import ImagePart, Message, TextPart
from ..prompts import VISION_PROMPT
from .addresses import is_public_address

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


class ImageTooLarge(Exception):
    """The image is over the configured size cap."""


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
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def marker(short_hash: str, description: str | None = None) -> str:
    """How an image appears in text: its short hash and, if known, a description."""
    return f"[图片 {short_hash}：{description}]" if description else f"[图片 {short_hash}]"


async def download_image(
    http: httpx.AsyncClient, url: str, max_bytes: int, *, public_only: bool = False
) -> Image:
    """GET an http(s) image within DOWNLOAD_TIMEOUT_SECONDS in all, stopping as soon as it
    exceeds `max_bytes`. With `public_only`, a host that resolves to a private, loopback or
    otherwise non-global address is refused. Raises ImageTooLarge, httpx.HTTPError,
    asyncio.TimeoutError or ValueError (not an image, bad URL, private host)."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"not an http(s) URL: {url[:60]!r}")
    # httpx's timeout is per read: a server trickling bytes would hold the session's queue.
    return await asyncio.wait_for(
        _checked_download(http, url, max_bytes, public_only), DOWNLOAD_TIMEOUT_SECONDS
    )


async def _checked_download(
    http: httpx.AsyncClient, url: str, max_bytes: int, public_only: bool
) -> Image:
    if public_only and not await resolves_to_public_addresses(url):
        raise ValueError("host is not a public address")
    return await _download(http, url, max_bytes)


async def resolves_to_public_addresses(url: str) -> bool:
    """Whether every address the URL's host resolves to is globally routable, so a link the
    model writes cannot make the bot fetch (and post) something from the bot's own network.
    Redirects are not followed by the client, so the checked host is the fetched one."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return False
    if not host:
        return False
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port or (443 if parts.scheme == "https" else 80), type=socket.SOCK_STREAM
        )
    except OSError:
        return False
    return bool(infos) and all(is_public_address(str(info[4][0])) for info in infos)


async def _download(http: httpx.AsyncClient, url: str, max_bytes: int) -> Image:
    async with http.stream("GET", url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
        response.raise_for_status()
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > max_bytes:
            raise ImageTooLarge(f"{declared} bytes")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise ImageTooLarge(f"over {max_bytes} bytes")
            chunks.append(chunk)
    data = b"".join(chunks)
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
    """Turns QQ image URLs into model input, following `multimodal` and the vision model."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        max_bytes: int,
        multimodal: bool,
        vision: LLMClient | NoVision,
        cache: DescriptionCache,
    ) -> None:
        self.http = http
        self.max_bytes = max_bytes
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
            image = await download_image(self.http, url, self.max_bytes)
        except ImageTooLarge as exc:
            # The user sees the same marker as any other failure; the reason is in the log.
            logger.info("image refused, too large (%s): %s", exc, url[:80])
            return TextPart(marker(short_hash_of(identity or url), UNRECOGNISED))
        except (httpx.HTTPError, ValueError, asyncio.TimeoutError) as exc:
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

"""The personas an operator defined: one `.md` file each in the personas folder (the file
name is the persona's name, the text its system prompt, an optional `---` front matter with
`model: …` picks another main model), plus the built-in `默认` (AIMEMORY_SYSTEM_PROMPT).
A bad file is skipped with a log line naming it; the others still load. The catalog is
kept in memory and read again only when the folder's listing changed."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..scopes import DEFAULT_PERSONA as DEFAULT_PERSONA
from ..scopes import MAX_PERSONA_NAME_CHARS as MAX_PERSONA_NAME_CHARS
from ..scopes import is_valid_persona_name as is_valid_persona_name

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_PERSONA_CHARS = 20_000  # a system prompt beyond this would eat the context budget
PERSONA_SUFFIX = ".md"
# Front-matter keys a persona file may set; anything else is logged and ignored.
FRONT_MATTER_KEYS = frozenset({"model"})
# A file written this recently is read again next time even if its listing looks the same:
# filesystems that keep times to the second (FAT: two) show an edit made within the same
# tick as the last read with unchanged times.
RECENT_CHANGE_SECONDS = 2.0

# What the folder's listing says of each persona file: name, size, modification and change
# times (ns), inode. A file edited, added, removed or replaced changes it.
Listing = tuple[tuple[str, int, int, int, int], ...]


@dataclass(frozen=True, slots=True)
class Persona:
    """One character the bot can play: its name, system prompt and (optionally) model."""

    name: str
    prompt: str
    model: str | None = None


class BadPersonaFile(ValueError):
    """Why a persona file was skipped (the message goes to the log)."""


def parse_persona(name: str, raw: bytes) -> Persona:
    """A persona from its file's bytes; raises BadPersonaFile saying what is wrong."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadPersonaFile("not UTF-8") from exc
    body, model = _split_front_matter(text)
    prompt = body.strip()
    if not prompt:
        raise BadPersonaFile("empty")
    if len(prompt) > MAX_PERSONA_CHARS:
        raise BadPersonaFile(f"{len(prompt)} characters, over {MAX_PERSONA_CHARS}")
    return Persona(name, prompt, model)


def _split_front_matter(text: str) -> tuple[str, str | None]:
    """The text after an optional `---` block, and the model it names."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return text, None
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration as exc:
        raise BadPersonaFile("front matter without its closing ---") from exc
    model: str | None = None
    for line in lines[1:end]:
        key, colon, value = line.partition(":")
        key = key.strip().lower()
        if not colon or not key:
            continue
        if key not in FRONT_MATTER_KEYS:
            logger.warning("persona front matter: unknown key %r ignored", key)
            continue
        model = value.strip().strip("'\"") or None
    return "\n".join(lines[end + 1 :]), model


class PersonaCatalog:
    """The personas in `directory` plus `默认`; `reload` brings them up to date with the
    folder (at startup and when a persona command runs, so a new file needs no restart),
    reading the files only when the folder's listing changed."""

    def __init__(self, directory: Path | None, default_prompt: str) -> None:
        self.directory = directory
        self._default = Persona(DEFAULT_PERSONA, default_prompt)
        self._personas: dict[str, Persona] = {DEFAULT_PERSONA: self._default}
        # The listing the personas were read from; None: read the files next time.
        self._listing: Listing | None = None
        self._reloading = asyncio.Lock()

    @property
    def default(self) -> Persona:
        """The built-in persona."""
        return self._default

    def names(self) -> list[str]:
        """Every persona's name, `默认` first, the others sorted."""
        others = sorted(n for n in self._personas if n != DEFAULT_PERSONA)
        return [DEFAULT_PERSONA, *others]

    def get(self, name: str) -> Persona | None:
        """The persona called `name`, if it exists (as of the last reload)."""
        return self._personas.get(name)

    async def reload(self) -> None:
        """Re-read the folder off the event loop if its listing changed since the last
        read (a listing costs a stat per file, a read ~10 times that); a bad file is
        skipped and logged. One reload at a time, so an older read never wins."""
        if self.directory is None:
            return
        async with self._reloading:
            listing, loaded = await asyncio.to_thread(
                _read_if_changed, self.directory, self._listing
            )
            if loaded is not None:
                self._personas = {DEFAULT_PERSONA: self._default, **loaded}
            self._listing = listing


def _read_if_changed(
    directory: Path, last: Listing | None
) -> tuple[Listing | None, dict[str, Persona] | None]:
    """The folder's listing, to keep (None: not to be trusted next time), and its personas,
    or None when the listing is `last`: nothing changed."""
    listing = _listing(directory)
    if listing is not None and listing == last:
        return listing, None
    personas: dict[str, Persona] = {}
    for name, *_ in listing or ():
        persona = _read_file(directory / name)
        if persona is not None:
            personas[persona.name] = persona
    return (listing if listing is not None and _settled(listing) else None), personas


def _listing(directory: Path) -> Listing | None:
    """Each persona file's name, size, times and inode, by name (the folder is made if
    missing); None when the folder cannot be read."""
    entries: list[tuple[str, int, int, int, int]] = []
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with os.scandir(directory) as scan:
            for entry in scan:
                if entry.name.endswith(PERSONA_SUFFIX):
                    entries.append(_listed(entry))
    except OSError:
        logger.exception("cannot read the personas folder %s", directory)
        return None
    return tuple(sorted(entries))


def _listed(entry: os.DirEntry[str]) -> tuple[str, int, int, int, int]:
    try:
        stat = entry.stat()  # through a symlink: an edit of its target counts
    except OSError:
        return (entry.name, -1, -1, -1, -1)  # a dangling link: reading it says why
    return (entry.name, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)


def _settled(listing: Listing) -> bool:
    """Whether no file was written within RECENT_CHANGE_SECONDS (see there)."""
    recent_ns = time.time_ns() - int(RECENT_CHANGE_SECONDS * 1e9)
    return all(mtime < recent_ns for _, _, mtime, _, _ in listing)


def _read_file(path: Path) -> Persona | None:
    name = path.name[: -len(PERSONA_SUFFIX)]
    if name == DEFAULT_PERSONA or not is_valid_persona_name(name):
        logger.warning("persona file %s skipped: unusable name", path)
        return None
    try:
        # Read at most one byte past the limit, so a huge file is not loaded whole just
        # to be refused.
        limit_bytes = MAX_PERSONA_CHARS * 4  # UTF-8 takes at most 4 bytes a character
        with path.open("rb") as file:
            raw = file.read(limit_bytes + 1)
        if len(raw) > limit_bytes:
            raise BadPersonaFile(f"over {MAX_PERSONA_CHARS} characters")
        return parse_persona(name, raw)
    except BadPersonaFile as exc:
        logger.warning("persona file %s skipped: %s", path, exc)
    except OSError as exc:
        logger.warning("persona file %s skipped: %s", path, exc)
    return None

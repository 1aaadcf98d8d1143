"""Where a memory came from, as its row keeps it: how it arrived, who said it (QQ number and
the name they went by then), who passed it on (quoted or forwarded it), and the chat it was
said in. What was not recorded (memories saved before this was) stays unknown: None."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

# said: the speaker's own words; quoted / forwarded: someone else's words a member quoted
# or forwarded; review / extract: the background reviewer, the extraction before
# compression; command: a person's `~记忆` command; panel: the web panel's operator.
Origin = Literal["said", "quoted", "forwarded", "review", "extract", "command", "panel"]
ORIGINS: frozenset[str] = frozenset(get_args(Origin))
# The columns of `memories` that hold it, in the order `columns()` gives their values.
PROVENANCE_COLUMNS = (
    "origin",
    "said_by_id",
    "said_by_name",
    "told_by_id",
    "told_by_name",
    "said_in",
)


@dataclass(frozen=True, slots=True)
class Person:
    """Someone as a memory names them: the QQ number (None when there is none, as for an
    anonymous sender) and the name they went by at the time ('' when not known)."""

    user_id: str | None
    name: str = ""

    @classmethod
    def of(cls, user_id: object, name: object) -> Person | None:
        """A person from stored or reported values; None when neither is known."""
        number = str(user_id) if user_id not in (None, "") else None
        shown = str(name) if name else ""
        return cls(number, shown) if number or shown else None


@dataclass(frozen=True, slots=True)
class Provenance:
    """How a memory arrived (`origin`), who said it (`said_by`), who quoted or forwarded it
    (`told_by`, for those origins), and the chat key it was said in (`chat`)."""

    origin: Origin | None = None
    said_by: Person | None = None
    told_by: Person | None = None
    chat: str | None = None

    @property
    def author_id(self) -> str | None:
        """The QQ number of whoever had the memory saved: who passed it on, else who said
        it (None when neither is recorded)."""
        person = self.told_by or self.said_by
        return person.user_id if person else None

    def columns(self) -> tuple[str | None, ...]:
        """The values of PROVENANCE_COLUMNS."""
        said, told = self.said_by, self.told_by
        return (
            self.origin,
            said.user_id if said else None,
            said.name if said else None,
            told.user_id if told else None,
            told.name if told else None,
            self.chat,
        )

    @classmethod
    def from_columns(cls, values: tuple[object, ...]) -> Provenance:
        """From the values of PROVENANCE_COLUMNS; an origin this release does not know
        reads as unknown."""
        origin, said_id, said_name, told_id, told_name, chat = values
        return cls(
            origin=str(origin) if origin in ORIGINS else None,  # type: ignore[arg-type]
            said_by=Person.of(said_id, said_name),
            told_by=Person.of(told_id, told_name),
            chat=str(chat) if chat else None,
        )

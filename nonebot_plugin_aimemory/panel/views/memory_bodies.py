"""The bodies of the memory writes, as pydantic models with today's leniency: tags as a
list or as a comma-separated string typed in a form, unknown fields ignored, `private`
read by its truthiness. A body that does not fit says why, as the panel's pages show it."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, StrictStr, ValidationError
from pydantic.types import Strict

from ... import texts
from ...memory import MISSING, Missing
from .errors import PanelError, bad_request


def split_tags(raw: object) -> object:
    """A comma-separated string (as typed in a form) as its tags; anything else as it is."""
    if isinstance(raw, str):
        return [tag.strip() for tag in raw.replace("，", ",").split(",") if tag.strip()]
    return raw


# Strict: only a JSON array (or a string, split above) is tags; a number or an object is not.
Tags = Annotated[Annotated[list[Any], Strict()] | None, BeforeValidator(split_tags)]
Body = TypeVar("Body", bound=BaseModel)
# The reason a body is refused for, by the first field found wrong (fields in this order).
_FIELD_REASONS = {"content": texts.PANEL_CONTENT_NEEDED, "tags": texts.PANEL_TAGS_LIST}


class MemoryCreate(BaseModel):
    """`{"content": "…", "tags": ["…"] or "a, b"}`: a new memory."""

    content: StrictStr
    tags: Tags = None


class MemoryPatch(BaseModel):
    """`{"content"?, "tags"?, "private"?}`: only what is given changes (`private` only for
    a person's memory, which the scope decides)."""

    content: StrictStr = ""
    tags: Tags = None
    private: Annotated[bool, BeforeValidator(bool)] = False

    def given(self, field: str) -> bool:
        """Whether the body named `field` (even as null)."""
        return field in self.model_fields_set

    @property
    def new_content(self) -> str | Missing:
        """The new content, or MISSING when unchanged."""
        return self.content if self.given("content") else MISSING

    @property
    def new_tags(self) -> list[Any] | Missing | None:
        """The new tags (None clears them), or MISSING when unchanged."""
        return self.tags if self.given("tags") else MISSING


def read_body(model: type[Body], body: dict[str, Any]) -> Body:
    """`body` as `model`, or a 400 naming the first field that does not fit."""
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise _refusal(error) from None


def _refusal(error: ValidationError) -> PanelError:
    first = error.errors()[0]["loc"]
    return bad_request(_FIELD_REASONS.get(str(first[0]) if first else "", texts.PANEL_BAD_JSON))

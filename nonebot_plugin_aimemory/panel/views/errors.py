"""An answer of the panel API other than success: an HTTP status and the JSON body
`{"error": code, "reason": 中文说明}` (some refusals add the memory they are about)."""

from __future__ import annotations

from typing import Any

from ... import texts


class PanelError(Exception):
    """An answer other than success: its HTTP status and JSON body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(status, body)
        self.status = status
        self.body = body


def refusal(status: int, error: str, reason: str) -> PanelError:
    """The usual error answer: a code and a reason."""
    return PanelError(status, {"error": error, "reason": reason})


def bad_request(reason: str) -> PanelError:
    """400: the request itself is wrong (its body, a field of it)."""
    return refusal(400, "bad_request", reason)


def not_found(what: str) -> PanelError:
    """404: no such memory in this scope."""
    return refusal(404, "not_found", texts.panel_not_found(what))

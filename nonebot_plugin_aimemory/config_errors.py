"""What an operator is told about a bad configuration: `ConfigError`, and pydantic's
validation errors worded per key with the values the key allows."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails


class ConfigError(ValueError):
    """An invalid configuration value, named by its key with what it allows. An ordinary
    exception, not a SystemExit: NoneBot's loader logs it and skips this plugin alone, so
    the user's other plugins keep running (the bundled bot.py still refuses to start)."""


# What pydantic's messages leave unsaid: the values a key accepts (booleans), or the whole
# range of a number (pydantic names only the bound that was crossed, or none).
BOOLEAN_ERRORS = frozenset({"bool_parsing", "bool_type"})
NUMBER_ERRORS = frozenset(
    {
        "int_parsing",
        "int_type",
        "int_from_float",
        "float_parsing",
        "float_type",
        "greater_than",
        "greater_than_equal",
        "less_than",
        "less_than_equal",
    }
)
BOUND_SIGNS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))


def secret_keys(fields: Mapping[str, FieldInfo]) -> frozenset[str]:
    """The keys whose value neither a dump of the config nor an error message shows."""
    return frozenset(name for name, field in fields.items() if field.annotation is SecretStr)


def describe_errors(error: ValidationError, fields: Mapping[str, FieldInfo]) -> str:
    """One entry per bad key of a model with these `fields`, `aimemory_x: reason (got
    value)`, with the allowed values where pydantic's reason does not name them. A key typed
    as a union is described by the branch that got furthest, not by every branch."""
    by_key: dict[str, list[ErrorDetails]] = {}
    for item in error.errors():
        by_key.setdefault(str(item["loc"][0]) if item["loc"] else "?", []).append(item)
    secrets = secret_keys(fields)
    return "; ".join(
        f"{key}: {_describe_key_errors(items, fields, secrets)}" for key, items in by_key.items()
    )


def _describe_key_errors(
    items: list[ErrorDetails], fields: Mapping[str, FieldInfo], secrets: frozenset[str]
) -> str:
    deepest = max(len(item["loc"]) for item in items)
    reasons = []
    for item in items:
        if len(item["loc"]) < deepest:
            continue  # a union branch that failed sooner than another
        reason = item["msg"].removeprefix("Value error, ")
        position = [part for part in item["loc"][1:] if isinstance(part, int)]
        where = f"item {position[0] + 1}: " if position else ""
        key = str(item["loc"][0]) if item["loc"] else ""
        allowed = _allowed_values(fields.get(key), item["type"])
        got = f"{len(str(item['input']))} characters" if key in secrets else repr(item["input"])
        reasons.append(f"{where}{reason} (got {got}{allowed})")
    return ", ".join(reasons)


def _allowed_values(field: FieldInfo | None, error_type: str) -> str:
    """`; allowed: …` for a boolean or a bounded number, else nothing."""
    if error_type in BOOLEAN_ERRORS:
        return "; allowed: true or false"
    if error_type not in NUMBER_ERRORS or field is None:
        return ""
    bounds = [
        f"{sign} {bound}"
        for constraint in field.metadata
        for name, sign in BOUND_SIGNS
        if (bound := getattr(constraint, name, None)) is not None
    ]
    return f"; allowed: {' and '.join(bounds)}" if bounds else ""

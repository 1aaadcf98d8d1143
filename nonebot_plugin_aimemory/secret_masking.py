"""Secrets masked in NoneBot's console, for the processes this project starts itself (bot.py
and the migration tool; never a user's bot, whose console is theirs). At LOG_LEVEL=DEBUG
NoneBot logs its whole configuration, `.env`'s keys, tokens and database URLs as typed.

This module imports nothing of the plugin: bot.py loads it from its file before NoneBot
is set up, when importing the plugin package is not allowed yet."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loguru import Record

# `'aimemory_api_key': 'sk-…'` in NoneBot's dump of its configuration (a dict's repr); an
# empty value stays `''`, so a key not set still shows.
SECRET_SETTING = re.compile(
    r"('[a-z0-9_]*(?:api_key|token|secret|password)[a-z0-9_]*'): (['\"])(?:\\.|(?!\2).)+\2",
    re.IGNORECASE,
)
# The password of a URL (`postgresql://user:password@host/db`), whatever setting holds it.
URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@'\"]*:)[^\s@'\"]+@", re.IGNORECASE)
MASK = "'**********'"
URL_MASK = "***"


def mask_secrets(text: str) -> str:
    """The text with the values of secret-looking settings (API keys, tokens) and the
    passwords of URLs masked."""
    text = SECRET_SETTING.sub(lambda match: f"{match[1]}: {MASK}", text)
    return URL_PASSWORD.sub(lambda match: f"{match[1]}{URL_MASK}@", text)


def mask_secrets_in_the_console() -> None:
    """NoneBot's console sink, added again (its format, its level filter) with secrets
    masked; call it before `nonebot.init`, which logs the configuration. The plugin's own
    settings are SecretStr, shown masked anyway; NoneBot's dump shows them as typed."""
    from nonebot.log import default_filter, default_format, logger, logger_id

    def masked(record: Record) -> bool:
        record["message"] = mask_secrets(record["message"])
        return default_filter(record)

    logger.remove(logger_id)
    logger.add(sys.stdout, level=0, diagnose=False, filter=masked, format=default_format)

""".env.example, the file people copy and edit: it names every key of the plugin's Config,
each under a comment line in Chinese; the keys people fill in are active and their values
pass the Config's validation; a key left at its default is commented out with the default
the Config really has, so a later change of a default reaches everyone who copied the file."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from dotenv import dotenv_values

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / ".env.example"
# `KEY=value`, active or commented out as `# KEY=value`.
KEY_LINE = re.compile(r"^(?P<commented>#\s?)?(?P<key>[A-Z][A-Z0-9_]*)=(?P<value>.*)$")
CHINESE = re.compile(r"[\u4e00-\u9fff]")
# Active keys: what people fill in (provider and key) and what the bundled bot.py and the
# OneBot client need to find each other.
ACTIVE_KEYS = {
    "AIMEMORY_PROVIDER",
    "AIMEMORY_API_KEY",
    "DRIVER",
    "HOST",
    "PORT",
    "ONEBOT_ACCESS_TOKEN",
    "SUPERUSERS",
    "NICKNAME",
}


def example_lines() -> list[str]:
    return EXAMPLE.read_text(encoding="utf-8").splitlines()


def key_lines() -> dict[str, tuple[int, bool, str]]:
    """Each key: its line number, whether it is active, and its value as typed."""
    keys: dict[str, tuple[int, bool, str]] = {}
    for number, line in enumerate(example_lines()):
        match = KEY_LINE.match(line)
        if match is not None:
            key = match["key"]
            assert key not in keys, f"{key} is listed twice"
            keys[key] = (number, match["commented"] is None, match["value"])
    return keys


def parsed(lines: list[str]) -> dict[str, str | None]:
    """The lines as NoneBot reads a .env file (python-dotenv: quotes removed)."""
    return dotenv_values(stream=io.StringIO("\n".join(lines)))


def plugin_settings(values: dict[str, str | None]) -> dict[str, str]:
    return {
        key.lower(): value or "" for key, value in values.items() if key.startswith("AIMEMORY_")
    }


def test_every_config_field_is_listed_active_or_commented_out() -> None:
    from nonebot_plugin_aimemory.config import Config

    listed = {key for key in key_lines() if key.startswith("AIMEMORY_")}

    assert listed == {field.upper() for field in Config.model_fields}


def test_every_key_has_a_comment_line_in_chinese_just_above_it() -> None:
    lines = example_lines()

    for key, (number, _, _) in key_lines().items():
        above = lines[number - 1] if number else ""
        assert above.startswith("#"), f"{key} has no comment line above it"
        assert KEY_LINE.match(above) is None, f"{key} shares the comment of the key above it"
        assert CHINESE.search(above), f"the comment above {key} is not in Chinese: {above}"


def test_only_the_keys_people_fill_in_are_active() -> None:
    active = {key for key, (_, is_active, _) in key_lines().items() if is_active}

    assert active == ACTIVE_KEYS


def test_the_active_plugin_values_pass_the_configs_validation() -> None:
    from nonebot_plugin_aimemory.config import Config

    active = [line for line in example_lines() if KEY_LINE.match(line) and not line.startswith("#")]

    config = Config.model_validate(plugin_settings(parsed(active)))

    assert not config.configured  # a hosted provider until the key is filled in


@pytest.mark.parametrize(
    "key",
    sorted(
        key
        for key, (_, active, _) in key_lines().items()
        if not active and key.startswith("AIMEMORY_")
    ),
)
def test_a_commented_out_key_shows_the_default_the_config_has(key: str) -> None:
    from nonebot_plugin_aimemory.config import Config

    number, _, _ = key_lines()[key]
    line = example_lines()[number].removeprefix("#").strip()

    shown = Config.model_validate(plugin_settings(parsed([line])))

    field = key.lower()
    assert getattr(shown, field) == getattr(Config(), field), f"{key} is not its default"


def test_the_bot_listens_on_this_machine_only_until_told_otherwise() -> None:
    active = parsed([line for line in example_lines() if not line.startswith("#")])

    assert active["HOST"] == "127.0.0.1"
    assert active["DRIVER"] == "~fastapi+~httpx+~websockets"

"""Reading a model's JSON: fences and chatter around it, and numbers written as tags."""

from __future__ import annotations

from typing import Any


def parse(text: str) -> Any:
    from nonebot_plugin_aimemory.text import parse_json_object

    return parse_json_object(text)


def test_numbers_written_as_tags_are_read_as_numbers() -> None:
    assert parse('{"evidence":[#81]}') == {"evidence": [81]}
    assert parse('好的：{"evidence":[ #81, #82 ],"n":1}') == {"evidence": [81, 82], "n": 1}


def test_valid_json_is_read_as_written() -> None:
    # a tag inside a string of valid JSON is the model's text: left as it is
    assert parse('{"content":"[#81] 小明说的"}') == {"content": "[#81] 小明说的"}
    assert parse('```json\n{"ops":[]}\n```') == {"ops": []}
    assert parse("没有 JSON") is None

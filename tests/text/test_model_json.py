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


def test_json_a_small_model_got_wrong_is_mended() -> None:
    # the real 1.5B model's answers: a key outside its object, ids unquoted, cut by the cap
    misplaced = (
        '{"facts":[{"content":"小明(20001)说：我在鹿鸣文化上班","tags":["工作"],'
        '["user_id":"20001"}]}'
    )
    assert parse(misplaced)["facts"][0]["content"] == "小明(20001)说：我在鹿鸣文化上班"
    unquoted = (
        '```json\n{"ops":[{"op":"create","content":"阿强(20002)开小米SU7","evidence":[6ur4]}]}\n```'
    )
    assert parse(unquoted)["ops"][0]["content"] == "阿强(20002)开小米SU7"
    cut = '{"ops":[{"op":"create","content":"Lily(20003)下周三去威海出差'
    assert parse(cut) == {"ops": [{"op": "create", "content": "Lily(20003)下周三去威海出差"}]}


def test_prose_is_no_object_mended_or_not() -> None:
    assert parse("这次没有什么值得记住的。") is None
    assert parse("好的 {") is None

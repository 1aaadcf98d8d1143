"""Tool calls a model wrote as text: every way small models write them is read as the real
calls, and nothing else is."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.messages import Message

SAVE = {"name": "memory_save", "arguments": {"content": "阿强(20002)下周三去杭州出差"}}
SAVE_JSON = json.dumps(SAVE, ensure_ascii=False)


def said(text: str) -> Message:
    from nonebot_plugin_aimemory.engine.messages import Message

    return Message("assistant", text)


TOOL_NAMES = ("memory_save", "memory_search")


def recover_text_tool_calls(reply: Message) -> Message:
    from nonebot_plugin_aimemory.engine.text_tool_calls import recover_text_tool_calls

    return recover_text_tool_calls(reply, TOOL_NAMES)


def calls_of(message: Message) -> list[tuple[str, dict[str, object]]]:
    return [(call.name, json.loads(call.arguments)) for call in message.tool_calls]


@pytest.mark.parametrize(
    "written",
    [
        SAVE_JSON,
        f"<tool_call>\n{SAVE_JSON}\n</tool_call>",
        f"```json\n{SAVE_JSON}\n```",
        f"[{SAVE_JSON}]",
        json.dumps({"name": "memory_save", "parameters": SAVE["arguments"]}, ensure_ascii=False),
        json.dumps(
            {"name": "memory_save", "arguments": json.dumps(SAVE["arguments"], ensure_ascii=False)},
            ensure_ascii=False,
        ),
        json.dumps({"type": "function", "function": SAVE}, ensure_ascii=False),
        f"memory_save({json.dumps(SAVE['arguments'], ensure_ascii=False)})",
        f"`memory_save( {json.dumps(SAVE['arguments'], ensure_ascii=False)} )`",
        # typographic quotes, some of them, as Qwen2.5-Coder-1.5B wrote one in a private chat
        SAVE_JSON.replace('"', "“", 3).replace('"', "”", 2),
        # the tool's name under "id", as it wrote one to a steering message
        json.dumps({"id": "memory_save", "arguments": SAVE["arguments"]}, ensure_ascii=False),
        json.dumps({"tool": "memory_save", "parameters": SAVE["arguments"]}, ensure_ascii=False),
    ],
)
def test_a_call_written_as_text_becomes_a_real_call(written: str) -> None:
    # given a reply whose text is a call, in one of the shapes small models write
    recovered = recover_text_tool_calls(said(written))
    # then it is that call, and no JSON is left to show
    assert calls_of(recovered) == [("memory_save", SAVE["arguments"])]
    assert not recovered.text
    assert recovered.tool_calls[0].id.startswith("call_")


def test_several_calls_one_per_line_become_several_calls() -> None:
    search = {"name": "memory_search", "arguments": {"query": "杭州"}}
    text = f"{SAVE_JSON}\n{json.dumps(search, ensure_ascii=False)}"
    recovered = recover_text_tool_calls(said(text))
    assert [name for name, _ in calls_of(recovered)] == ["memory_save", "memory_search"]
    assert len({call.id for call in recovered.tool_calls}) == 2


def test_calls_in_code_form_on_several_lines_become_several_calls() -> None:
    text = 'memory_search({"query": "猫"})\nmemory_save({"content": "小明(20001)家的猫叫年糕"})'
    recovered = recover_text_tool_calls(said(text))
    assert calls_of(recovered) == [
        ("memory_search", {"query": "猫"}),
        ("memory_save", {"content": "小明(20001)家的猫叫年糕"}),
    ]
    assert not recovered.text


@pytest.mark.parametrize(
    "written",
    [
        'memory_search(query="开的是什么车来着？", limit=100)',
        "memory_search( query = '开的是什么车来着？' , limit=100 )",
        '好的。memory_search(query="开的是什么车来着？", limit=100)',
    ],
)
def test_a_call_in_keyword_form_becomes_a_real_call(written: str) -> None:
    # seen from Qwen2.5-Coder-1.5B in a private chat, sent to the member as it was
    recovered = recover_text_tool_calls(said(written))
    assert calls_of(recovered) == [("memory_search", {"query": "开的是什么车来着？", "limit": 100})]
    assert "memory_search" not in recovered.text


def test_a_reply_of_a_tool_name_and_key_value_pairs_becomes_a_real_call() -> None:
    # seen from Qwen2.5-Coder-1.5B answering LoCoMo questions, once it had seen the shape
    recovered = recover_text_tool_calls(said("memory_search query=Caroline research limit=3"))
    assert calls_of(recovered) == [("memory_search", {"query": "Caroline research", "limit": 3})]
    assert not recovered.text


def test_a_sentence_with_an_equals_sign_is_not_a_bare_call() -> None:
    for text in ("memory_search 这个工具很好用，a=1", "x = 1 的意思是赋值", "print query=1"):
        reply = said(text)
        assert recover_text_tool_calls(reply) == reply


@pytest.mark.parametrize(
    "text",
    [
        'memory_search(query=open("/etc/passwd").read())',  # not a literal: never evaluated
        'memory_search("车")',  # positional
        'print(query="车")',  # not a tool
        "memory_search(query=(" + "(" * 3000 + ")",
    ],
)
def test_a_keyword_form_that_is_not_a_call_of_literals_is_left_as_it_is(text: str) -> None:
    reply = said(text)
    assert recover_text_tool_calls(reply) == reply


def test_words_around_a_call_stay_as_its_content() -> None:
    recovered = recover_text_tool_calls(
        said(f"好的，我记一下。\n<tool_call>{SAVE_JSON}</tool_call>")
    )
    assert calls_of(recovered) == [("memory_save", SAVE["arguments"])]
    assert recovered.text == "好的，我记一下。"


@pytest.mark.parametrize(
    "text",
    [
        "好的，记下了。",
        '你可以这样写：{"name": "小明", "age": 18}',  # an object with a name, not a call
        '{"name": 3, "arguments": {}}',
        '{"name": "has space", "arguments": {}}',
        '{"name": "memory_save", "arguments": {"content": "x"}',  # cut short
        "[" * 5000 + "]" * 5000 + ' "name"',
        '{"name": "memory_save", "arguments": [1, 2]}',
        '可以这样写：print({"content": "x"})',  # code form, but not a tool's name
        'json.memory_save({"content": "x"})',  # a method of something else
        'memory_save({"content": "x"}',  # no closing parenthesis
    ],
)
def test_text_that_is_not_a_call_is_left_as_it_is(text: str) -> None:
    reply = said(text)
    assert recover_text_tool_calls(reply) == reply


def test_a_reply_with_real_calls_is_left_as_it_is() -> None:
    from nonebot_plugin_aimemory.engine.messages import Message, ToolCall

    reply = Message("assistant", SAVE_JSON, tool_calls=(ToolCall("c1", "memory_search", "{}"),))
    assert recover_text_tool_calls(reply) == reply


def test_a_written_tool_response_is_removed_from_what_is_said() -> None:
    reply = said("<tool_response>\n已保存记忆 #3\n</tool_response>\n好的，记住啦！")
    recovered = recover_text_tool_calls(reply)
    assert recovered.text == "好的，记住啦！"
    assert not recovered.tool_calls


def test_a_reply_that_is_only_a_tool_response_is_empty() -> None:
    from nonebot_plugin_aimemory.engine.text_tool_calls import without_tool_responses

    assert not recover_text_tool_calls(said("<tool_response>已保存记忆 #3")).text
    assert without_tool_responses("前</tool_response>后") == "前后"


def test_typographic_quotes_in_an_answer_that_holds_no_call_stay() -> None:
    # given an answer that quotes words the typographic way
    reply = said("他说“明天见”，我说“好的”。")
    # then it is left as it is
    assert recover_text_tool_calls(reply) is reply


@pytest.mark.parametrize("written", ["memory_search?", "`memory_save`", " memory_search。\n"])
def test_a_bare_tool_name_as_the_whole_answer_is_no_answer(written: str) -> None:
    # given a reply that is only a tool's name (LoCoMo's questions, Qwen2.5-Coder-1.5B)
    recovered = recover_text_tool_calls(said(written))
    # then there is nothing to show: the turn asks for its answer again
    assert not recovered.text
    assert not recovered.tool_calls


def test_an_answer_that_names_a_tool_in_a_sentence_stays() -> None:
    reply = said("我可以用 memory_search 帮你查。")
    assert recover_text_tool_calls(reply).text == "我可以用 memory_search 帮你查。"


def test_typographic_quotes_inside_a_calls_value_stay_in_the_value() -> None:
    # given a well-formed call whose content quotes words the typographic way
    arguments = {"content": "阿强(20002)说“下周三去杭州”"}
    written = json.dumps({"name": "memory_save", "arguments": arguments}, ensure_ascii=False)
    # then the call is read as written, quotes and all
    assert calls_of(recover_text_tool_calls(said(written))) == [("memory_save", arguments)]


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ('["小明(20001)说：我家猫叫豆包。"]', "小明(20001)说：我家猫叫豆包。"),
        ('```json\n["豆包", "果果"]\n```', "豆包\n果果"),
        ('"你好呀"', "你好呀"),
    ],
)
def test_an_answer_written_as_a_json_list_of_strings_is_said_as_its_strings(
    written: str, shown: str
) -> None:
    # Qwen2.5-Coder-1.5B answered a private question with the note it was shown, as a list
    recovered = recover_text_tool_calls(said(written))
    assert (recovered.text, recovered.tool_calls) == (shown, ())


@pytest.mark.parametrize(
    "written", ["[1, 2, 3]", '["a", 1]', "[]", '["小明", ""]', "[这不是 JSON]", "好的 [1]"]
)
def test_other_bracketed_answers_are_left_as_they_are(written: str) -> None:
    assert recover_text_tool_calls(said(written)).text == written


# What Qwen2.5-Coder-1.5B wrote once a reply of this shape was in its window (issue #36).
TOLD_SEARCHES = (
    "- memory_search：\n keyword=菠萝 allergy\n\n结果：\n- memory_search：\n keyword=菠萝"
)


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        (f"{TOLD_SEARCHES}\n\n【你的回复】我对菠萝过敏来着。", "我对菠萝过敏来着。"),
        (
            f"{TOLD_SEARCHES}\n【回答】\n你对菠萝过敏。\n【备注】别吃",
            "你对菠萝过敏。\n【备注】别吃",
        ),
        ("memory_save: content=阿强(20002)对菠萝过敏\n【回复】记下了。", "记下了。"),
        ("- memory_search：【记忆】小红下周三去杭州\n【你的回复】去杭州。", "去杭州。"),
        (TOLD_SEARCHES, ""),
        (f"{TOLD_SEARCHES}\n\n结果：\n" * 40, ""),
        ("  -  memory_save：content=小红下周三去杭州出差", ""),
    ],
)
def test_calls_written_as_results_are_told_leave_only_the_answer_after_them(
    written: str, shown: str
) -> None:
    # given a reply that writes calls the way the last request tells results
    recovered = recover_text_tool_calls(said(written))
    # then no call of it runs and the member is shown only what it answered after them
    assert (recovered.text or "", recovered.tool_calls) == (shown, ())


@pytest.mark.parametrize(
    "written",
    [
        "我可以帮你用 memory_search：先查一下再说。",
        "- 苹果：红色\n- 香蕉：黄色",
        "- memory_forget：这个工具这里没有提供，所以删不掉。",
        # the tools described to a member who asked what the bot can do
        "- memory_save：保存一条记忆\n- memory_search：搜索记忆\n【提示】说“记住”就会保存",
        "memory_search:\n  按关键词搜索以前记下的事",
        "步骤：\n- 打开设置：点右上角\n【提示】别忘了保存",
    ],
)
def test_lines_that_name_no_offered_tool_at_their_start_stay(written: str) -> None:
    # a tool named inside a sentence, a list of other words, a tool not offered here
    assert recover_text_tool_calls(said(written)).text == written


@pytest.mark.parametrize(
    "written",
    [
        '{"id": "12345", "arguments": {"content": "x"}}',
        '{"id": "memory_save", "content": "阿强(20002)下周三去杭州出差"}',
        '{"tool": "math_add", "arguments": {"a": 1}}',
    ],
)
def test_an_object_naming_no_offered_tool_outside_name_is_no_call(written: str) -> None:
    # an id that is no tool, an object that is data beside a tool's name, an unoffered tool
    recovered = recover_text_tool_calls(said(written))
    assert (recovered.text, recovered.tool_calls) == (written, ())


def test_bare_data_is_a_json_object_or_a_list_holding_one() -> None:
    from nonebot_plugin_aimemory.engine.text_tool_calls import is_bare_data

    record = '{"id": "123", "content": "我的猫叫豆包", "tags": ["animal"]}'
    assert is_bare_data(record)
    assert is_bare_data(f"```json\n{record}\n```")
    assert is_bare_data(f"[{record}, {record}]")
    # words, words around a brace, strings, numbers and broken JSON are not
    for said in ("豆包", f"你说的是 {record} 吗", '["豆包"]', "42", '{"content": "豆包"', "{}x"):
        assert not is_bare_data(said), said


@pytest.mark.parametrize(
    ("reply", "sent"),
    [
        ("好的。可以使用 memory_save 函数，传入内容。", "好的。"),
        (
            "我能用：\n- memory_save：保存记忆\n要找就调用 memory_search 吧。",
            "我能用：\n- memory_save：保存记忆",
        ),
        (
            "1. `memory_search`: 搜索记忆\n还有别的吗？",
            "1. `memory_search`: 搜索记忆\n还有别的吗？",
        ),
        ("my_memory_save_v2 是个变量名。", "my_memory_save_v2 是个变量名。"),
        ("我会用 memory_save 记下来", ""),
    ],
    ids=["prose", "listed-then-prose", "listed", "longer-identifier", "nothing-else"],
)
def test_talk_of_a_tool_is_left_out_and_a_listing_kept(reply: str, sent: str) -> None:
    from nonebot_plugin_aimemory.engine.text_tool_calls import without_tool_talk

    assert without_tool_talk(reply, TOOL_NAMES) == sent

"""What the models read: the rule of what is worth remembering is one text shared by the
three writers of memory, stated once in the chatting model's system prompt (never in the tool
descriptions) and only when the memory tools exist; the six tool definitions stay lean and
keep their names and arguments; the JSON the extractor and reviewer ask for is what their
parsers read, and the injected memory block keeps its budget rules."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

MEMORY_WRITERS = ("memory_save", "extractor", "speaker extractor", "reviewer")
MEMORY_TOOLS = ("memory_save", "memory_search", "memory_update", "memory_forget")
CHAT_LOG_TOOLS = ("read_recent_chat", "search_current_chat")
# The contract with the tool handlers: name -> argument -> JSON type.
TOOL_ARGUMENTS = {
    "memory_save": {"content": "string", "tags": "array", "user_id": "string", "about": "string"},
    "memory_search": {"query": "string", "limit": "integer", "offset": "integer"},
    "memory_update": {"id": "string", "content": "string", "tags": "array", "user_id": "string"},
    "memory_forget": {"id": "string"},
    "read_recent_chat": {"limit": "integer"},
    "search_current_chat": {"keyword": "string", "limit": "integer"},
}
TOOL_REQUIRED = {
    "memory_save": ["content"],
    "memory_search": [],
    "memory_update": ["id"],
    "memory_forget": ["id"],
    "read_recent_chat": [],
    "search_current_chat": ["keyword"],
}
TOOL_DEFINITIONS_MAX_TOKENS = 700


def group_review_prompt() -> str:
    """The reviewer's prompt for a group, as the reviewer builds it."""
    from nonebot_plugin_aimemory import prompts
    from nonebot_plugin_aimemory.chatlog.reviewer import MAX_OPS

    return prompts.review_prompt("你是小忆。", in_group=True, max_ops=MAX_OPS)


def instructions_of(writer: str) -> str:
    """What the model writing memories as `writer` is told."""
    from nonebot_plugin_aimemory import prompts
    from nonebot_plugin_aimemory.scopes import Scope

    if writer == "memory_save":  # the chatting model, beside its memory tools
        return prompts.build_system_prompt(
            "你是小忆。", Scope.group(1), (*MEMORY_TOOLS, *CHAT_LOG_TOOLS)
        )
    if writer == "extractor":
        return prompts.EXTRACT_PROMPT
    if writer == "speaker extractor":
        return prompts.EXTRACT_SPEAKER_PROMPT
    return group_review_prompt()


@pytest.mark.parametrize("writer", MEMORY_WRITERS)
def test_every_memory_writer_is_told_the_same_rule(writer: str) -> None:
    from nonebot_plugin_aimemory import prompts

    text = instructions_of(writer)

    assert prompts.WORTH_REMEMBERING in text
    assert prompts.NOT_WORTH_REMEMBERING in text
    assert prompts.SELF_CONTAINED in text


def test_the_system_prompt_states_the_memory_rules_once() -> None:
    from nonebot_plugin_aimemory import prompts

    text = instructions_of("memory_save")

    assert text.count(prompts.WORTH_REMEMBERING) == 1
    assert text.count(prompts.NOT_WORTH_REMEMBERING) == 1
    assert text.count(prompts.SELF_CONTAINED) == 1


def test_no_tool_description_repeats_the_memory_rules() -> None:
    from nonebot_plugin_aimemory import prompts

    descriptions = [
        prompts.MEMORY_SAVE_DESCRIPTION,
        prompts.MEMORY_SEARCH_DESCRIPTION,
        prompts.MEMORY_UPDATE_DESCRIPTION,
        prompts.MEMORY_FORGET_DESCRIPTION,
        prompts.READ_RECENT_CHAT_DESCRIPTION,
        prompts.SEARCH_CURRENT_CHAT_DESCRIPTION,
    ]
    for description in descriptions:
        for rule in (prompts.WORTH_REMEMBERING, prompts.NOT_WORTH_REMEMBERING):
            assert rule not in description
        assert prompts.SELF_CONTAINED not in description
        assert prompts.TOOLS_SCOPE_NOTE not in description


def test_without_tools_the_system_prompt_has_no_tool_rules() -> None:
    from nonebot_plugin_aimemory import prompts
    from nonebot_plugin_aimemory.scopes import Scope

    text = prompts.build_system_prompt("你是小忆。", Scope.group(1))

    assert prompts.WORTH_REMEMBERING not in text
    assert prompts.TOOLS_SCOPE_NOTE not in text
    assert "memory_save" not in text


def test_chat_log_tools_alone_get_the_scope_note_but_not_the_memory_rules() -> None:
    from nonebot_plugin_aimemory import prompts
    from nonebot_plugin_aimemory.scopes import Scope

    text = prompts.build_system_prompt("你是小忆。", Scope.friend(2), CHAT_LOG_TOOLS)

    assert prompts.TOOLS_SCOPE_NOTE in text
    assert prompts.WORTH_REMEMBERING not in text


def test_the_system_prompt_starts_with_the_persona_and_says_where_the_chat_happens() -> None:
    from nonebot_plugin_aimemory import prompts
    from nonebot_plugin_aimemory.scopes import Scope

    group = prompts.build_system_prompt("你是小忆。", Scope.group(777), MEMORY_TOOLS)
    private = prompts.build_system_prompt("你是小忆。", Scope.friend(42))

    assert group.startswith("你是小忆。\n\n你正在 QQ 群 777 中聊天。")
    assert private.startswith("你是小忆。\n\n你正在和 QQ 用户 42 私聊。")


async def test_the_model_is_told_the_memory_rules_in_its_system_prompt(plugin) -> None:
    from nonebot_plugin_aimemory import prompts
    from tests.fakes.bots import RecordingBot
    from tests.fakes.events import group_message

    await RecordingBot().receive(group_message("hi", to_me=True, group_id=777))

    system = plugin.llm.last_messages()[0]["content"]
    assert system.count(prompts.WORTH_REMEMBERING) == 1
    assert prompts.TOOLS_SCOPE_NOTE in system


async def test_without_a_database_the_system_prompt_has_no_memory_rules(plugin, tmp_path) -> None:
    from nonebot_plugin_aimemory import prompts
    from tests.fakes.bots import RecordingBot
    from tests.fakes.events import group_message

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    await plugin.restart(aimemory_db_path=str(blocker / "aimemory.db"))
    await RecordingBot().receive(group_message("hi", to_me=True, group_id=777))

    request = plugin.llm.chat_requests[-1]
    assert "tools" not in request
    assert prompts.WORTH_REMEMBERING not in request["messages"][0]["content"]
    assert prompts.TOOLS_SCOPE_NOTE not in request["messages"][0]["content"]


async def test_the_six_tool_definitions_cost_at_most_700_tokens(plugin) -> None:
    specs = plugin.runtime.build_chatbot("g:9876543210").tools.specs_json()

    assert specs is not None
    assert plugin.runtime.counter.count(specs.decode()) <= TOOL_DEFINITIONS_MAX_TOKENS


async def test_tool_names_and_argument_types_are_kept(plugin) -> None:
    specs = json.loads(plugin.runtime.build_chatbot("g:1").tools.specs_json() or b"[]")

    arguments = {
        spec["function"]["name"]: {
            name: schema["type"]
            for name, schema in spec["function"]["parameters"]["properties"].items()
        }
        for spec in specs
    }
    assert arguments == TOOL_ARGUMENTS


async def test_the_required_tool_arguments_are_kept(plugin) -> None:
    specs = json.loads(plugin.runtime.build_chatbot("g:1").tools.specs_json() or b"[]")

    required = {
        spec["function"]["name"]: spec["function"]["parameters"].get("required", [])
        for spec in specs
    }
    assert required == TOOL_REQUIRED


def test_the_extractor_format_is_the_json_its_parser_reads() -> None:
    from nonebot_plugin_aimemory import prompts
    from nonebot_plugin_aimemory.memory.extractor import parse_facts

    example = prompts.EXTRACT_PROMPT.splitlines()[-2]
    filled = example
    for placeholder, value in zip(
        prompts.FACT_PLACEHOLDERS, ("阿强", "20002", "养了一只柯基", "宠物"), strict=True
    ):
        filled = filled.replace(placeholder, value)

    # the format filled in is a fact; the format copied as it is, is none
    assert parse_facts(filled) == [
        {"content": "阿强(20002)养了一只柯基", "tags": ["宠物"], "user_id": "20002"}
    ]
    assert parse_facts(example) == []
    for prompt in (prompts.EXTRACT_PROMPT, prompts.EXTRACT_SPEAKER_PROMPT):
        assert prompt.splitlines()[-2] == example
        assert prompt.endswith('没有值得记住的内容时输出 {"facts":[]}。')


def test_the_reviewer_format_is_the_json_its_parser_reads() -> None:
    from nonebot_plugin_aimemory.text.model_json import parse_json_object

    lines = group_review_prompt().splitlines()
    data = parse_json_object(lines[-2].replace("[<记录编号>]", "[1]"))

    assert data is not None
    assert [op["op"] for op in data["ops"]] == ["create", "update"]
    assert parse_json_object(lines[-1].partition("输出 ")[2].rstrip("。")) == {"ops": []}


@pytest.mark.parametrize("writer", ["extractor", "reviewer", "memory_save"])
def test_no_memory_writer_is_shown_a_made_up_fact_to_copy(writer: str) -> None:
    # Small models save a prompt's example fact as if the chat had said it: the formats
    # show placeholders only, so no example reads as a fact about anyone.
    from nonebot_plugin_aimemory import prompts

    text = instructions_of(writer)

    assert "12345" not in text
    assert "例如“" not in text
    for placeholder in prompts.FACT_PLACEHOLDERS:
        assert placeholder in text or writer == "memory_save"


def test_the_review_prompt_starts_with_the_persona_and_names_the_chat() -> None:
    from nonebot_plugin_aimemory import prompts

    group = group_review_prompt()
    private = prompts.review_prompt("你是小忆。", in_group=False, max_ops=2)

    assert group.startswith("你是小忆。\n\n---\n")
    assert "为这个群聊整理长期记忆" in group
    assert "为这个私聊整理长期记忆" in private
    assert "最多 2 个操作" in private


def test_tool_schemas_are_plain_json() -> None:
    from nonebot_plugin_aimemory import prompts

    schemas = [
        prompts.MEMORY_SAVE_PARAMETERS,
        prompts.MEMORY_UPDATE_PARAMETERS,
        prompts.MEMORY_FORGET_PARAMETERS,
        prompts.memory_search_parameters(default_limit=10, query_limit_max=50, limit_max=200),
        prompts.read_recent_chat_parameters(default_limit=20, limit_max=100),
        prompts.search_current_chat_parameters(default_limit=20, limit_max=100),
    ]
    for schema in schemas:
        assert json.loads(json.dumps(schema)) == schema
        assert schema["type"] == "object"


def record(memory_id: str, content: str) -> MemoryRecord:
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

    return MemoryRecord(id=memory_id, content=content, normalized=content)


def test_injection_is_empty_without_records() -> None:
    from nonebot_plugin_aimemory import prompts

    assert prompts.memory_injection([], 1500) == ""


def test_injection_skips_a_record_that_does_not_fit_and_keeps_the_next() -> None:
    from nonebot_plugin_aimemory import prompts

    records = [record("aaaa", "短的一条"), record("bbbb", "长" * 2000), record("cccc", "又一条")]

    block = prompts.memory_injection(records, 1500)

    assert block.splitlines() == [
        prompts.MEMORY_INJECTION_HEADER,
        "#aaaa 「短的一条」",
        "#cccc 「又一条」",
    ]


def test_injection_cuts_an_over_budget_best_record_to_half_the_budget() -> None:
    from nonebot_plugin_aimemory import prompts

    records = [record("aaaa", "长" * 2000), record("bbbb", "短的一条")]

    block = prompts.memory_injection(records, 1500)

    _, best, rest = block.splitlines()
    assert best.startswith("#aaaa 「长")
    assert best.endswith("长…」")  # the quote still closes
    assert len(prompts.MEMORY_INJECTION_HEADER) + 1 + len(best) == 1500 // 2
    assert rest == "#bbbb 「短的一条」"


def test_injection_drops_the_best_record_when_no_content_would_be_left() -> None:
    from nonebot_plugin_aimemory import prompts

    budget = 2 * (len(prompts.MEMORY_INJECTION_HEADER) + 8)

    assert prompts.memory_injection([record("aaaa", "长" * 2000)], budget) == ""

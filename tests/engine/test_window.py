"""`api_safe` turns any stored history into one every chat API accepts; `Window` keeps its
token total current."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes.openai_server import validate_chat_request

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.messages import Message, ToolCall
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter
    from nonebot_plugin_aimemory.engine.window import Window

# database=None: no .hypothesis folder in the repository; examples are cheap to regenerate.
THOROUGH = settings(max_examples=300, deadline=None, database=None)
PROPERTY = settings(max_examples=100, deadline=None, database=None)
CALL_IDS = ("call_a", "call_b", "call_c", "call_d")

# --------------------------------------------------------------------------- generators

texts = st.text(max_size=12)


def _user_messages() -> st.SearchStrategy[Message]:
    from nonebot_plugin_aimemory.engine.messages import ImagePart, TextPart, user

    images = st.builds(ImagePart.from_source, st.sampled_from(["https://e.x/1.png", "data:,x"]))
    parts = st.lists(st.one_of(st.builds(TextPart, texts), images), min_size=1, max_size=3)
    return st.one_of(
        st.builds(user, texts),
        parts.map(lambda items: user(tuple(items))),
    )


def _plain_assistants() -> st.SearchStrategy[Message]:
    from nonebot_plugin_aimemory.engine.messages import assistant

    return st.builds(assistant, texts)


def _empty_assistants() -> st.SearchStrategy[Message]:
    from nonebot_plugin_aimemory.engine.messages import assistant

    return st.just(None).map(assistant)


def _system_messages() -> st.SearchStrategy[Message]:
    from nonebot_plugin_aimemory.engine.messages import system

    return st.builds(system, texts)


def _orphan_tools() -> st.SearchStrategy[Message]:
    from nonebot_plugin_aimemory.engine.messages import Message

    return st.builds(
        lambda call_id, content: Message("tool", content, tool_call_id=call_id, name="lookup"),
        st.sampled_from((*CALL_IDS, None)),
        texts,
    )


# Deferred: built when hypothesis first draws, once NoneBot is set up and the plugin loads.
user_messages = st.deferred(_user_messages)
plain_assistants = st.deferred(_plain_assistants)
empty_assistants = st.deferred(_empty_assistants)
system_messages = st.deferred(_system_messages)
orphan_tools = st.deferred(_orphan_tools)


@st.composite
def tool_rounds(draw: st.DrawFn) -> list[Message]:
    """An assistant asking for 1..3 calls, then any subset, permutation or repetition of
    their results (ids may repeat, as a confused server might send them)."""
    from nonebot_plugin_aimemory.engine.messages import ToolCall, assistant, tool_result

    count = draw(st.integers(1, 3))
    ids = draw(st.lists(st.sampled_from(CALL_IDS), min_size=count, max_size=count))
    calls = tuple(ToolCall(call_id, "lookup", '{"q":1}') for call_id in ids)
    content = draw(st.one_of(st.none(), texts))
    answered = draw(st.lists(st.integers(0, count - 1), max_size=count + 2))
    results = [tool_result(calls[i], f"result {i}") for i in answered]
    return [assistant(content, calls), *results]


@st.composite
def raw_windows(draw: st.DrawFn) -> list[Message]:
    """Whatever a store might hold: any mix of every kind of message, in any order."""
    single = st.one_of(
        user_messages, plain_assistants, empty_assistants, system_messages, orphan_tools
    ).map(lambda message: [message])
    chunks = draw(st.lists(st.one_of(single, tool_rounds()), max_size=12))
    return [message for chunk in chunks for message in chunk]


@st.composite
def valid_windows(draw: st.DrawFn) -> list[Message]:
    """Windows the API already accepts: user, complete tool rounds, assistant, user, ..."""
    from nonebot_plugin_aimemory.engine.messages import ToolCall, assistant, tool_result

    messages: list[Message] = []
    exchanges = draw(st.integers(0, 5))
    for exchange in range(exchanges):
        messages.append(draw(user_messages))
        rounds = draw(st.integers(0, 2))
        for round_ in range(rounds):
            count = draw(st.integers(1, 3))
            calls = tuple(
                ToolCall(f"call_{exchange}_{round_}_{i}", "lookup", "{}") for i in range(count)
            )
            messages.append(assistant(draw(st.one_of(st.none(), texts)), calls))
            messages += [tool_result(call, f"result {call.id}") for call in calls]
        last = exchange == exchanges - 1
        if (rounds == 0 and not last) or draw(st.booleans()):
            messages.append(draw(plain_assistants))
    return messages


def chat_request(history: Sequence[Message]) -> dict[str, Any]:
    """The request a turn would make of `history`: system prompt first, a user message last
    unless the history already ends with the user or with tool results."""
    from nonebot_plugin_aimemory.engine.messages import system, user

    messages = [system("你是小忆").to_api(), *(m.to_api() for m in history)]
    if not history or history[-1].role == "assistant":
        messages.append(user("下一句").to_api())
    return {"model": "m", "messages": messages}


def assert_accepted(history: Sequence[Message]) -> None:
    assert validate_chat_request(chat_request(history), strict_alternation=True) is None


def assert_untouched(before: Sequence[Message], after: Sequence[Message]) -> None:
    assert len(after) == len(before)
    assert all(a is b for a, b in zip(after, before, strict=True))


# --------------------------------------------------------------------------- properties


@THOROUGH
@given(raw_windows())
def test_api_safe_output_is_accepted_by_a_strict_api(window: list[Message]) -> None:
    from nonebot_plugin_aimemory.engine.window import api_safe

    # given any stored window
    # when it is made safe
    safe = api_safe(window)
    # then a strict OpenAI-compatible API accepts it
    assert_accepted(safe)


@PROPERTY
@given(raw_windows())
def test_api_safe_never_loses_what_the_user_said(window: list[Message]) -> None:
    from nonebot_plugin_aimemory.engine.window import api_safe

    safe = api_safe(window)

    said = "\n".join(m.text for m in safe if m.role == "user")
    assert all(m.text in said for m in window if m.role == "user")


@PROPERTY
@given(valid_windows())
def test_api_safe_returns_a_valid_window_as_the_same_objects(window: list[Message]) -> None:
    from nonebot_plugin_aimemory.engine.window import api_safe

    # given a window the API already accepts
    assert_accepted(window)
    # when it is made safe
    safe = api_safe(window)
    # then nothing changed, down to object identity (so cached JSON is reused)
    assert_untouched(window, safe)


@PROPERTY
@given(raw_windows())
def test_every_cut_at_first_user_index_is_accepted_after_api_safe(window: list[Message]) -> None:
    from nonebot_plugin_aimemory.engine.window import api_safe, first_user_index_at_or_after

    for start in range(len(window) + 1):
        cut = first_user_index_at_or_after(window, start)

        assert cut >= start
        assert cut == len(window) or window[cut].role == "user"
        assert_accepted(api_safe(window[cut:]))


@PROPERTY
@given(raw_windows())
def test_every_cut_at_first_user_index_of_a_safe_window_needs_no_repair(
    window: list[Message],
) -> None:
    from nonebot_plugin_aimemory.engine.window import api_safe, first_user_index_at_or_after

    safe = api_safe(window)
    for start in range(len(safe) + 1):
        tail = safe[first_user_index_at_or_after(safe, start) :]

        assert_untouched(tail, api_safe(tail))


@PROPERTY
@given(raw_windows())
def test_truncate_oldest_half_then_api_safe_is_accepted(window: list[Message]) -> None:
    from nonebot_plugin_aimemory.engine.window import api_safe, truncate_oldest_half

    assert_accepted(api_safe(truncate_oldest_half(window)))


@PROPERTY
@given(raw_windows())
def test_truncate_oldest_half_of_a_safe_window_keeps_at_most_the_newer_half_untouched(
    window: list[Message],
) -> None:
    from nonebot_plugin_aimemory.engine.window import api_safe, truncate_oldest_half

    safe = api_safe(window)

    kept = truncate_oldest_half(safe)

    assert len(kept) <= len(safe) - len(safe) // 2
    assert_untouched(safe[len(safe) - len(kept) :], kept)
    assert_untouched(kept, api_safe(kept))


# --------------------------------------------------------------------------- examples


def two_lookups() -> tuple[ToolCall, ToolCall]:
    """Two parallel calls of the `lookup` tool, with ids `call_1` and `call_2`."""
    from nonebot_plugin_aimemory.engine.messages import ToolCall

    return ToolCall("call_1", "lookup", "{}"), ToolCall("call_2", "lookup", "{}")


def test_orphan_tool_message_is_dropped() -> None:
    from nonebot_plugin_aimemory.engine.messages import Message, assistant, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    question, answer = user("天气？"), assistant("晴")
    orphan = Message("tool", "晴", tool_call_id="call_9", name="lookup")

    assert api_safe([question, orphan, answer]) == [question, answer]


def test_system_messages_in_the_window_are_dropped() -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, system, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    question, answer = user("你好"), assistant("你好呀")

    assert api_safe([system("旧的提示"), question, system("又一个"), answer]) == [question, answer]


def test_parallel_calls_with_a_missing_result_keep_only_the_assistant_text() -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, tool_result, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    call_1, call_2 = two_lookups()
    # given two parallel calls of which only one was answered
    window = [
        user("查一下"),
        assistant("我查一下。", (call_1, call_2)),
        tool_result(call_1, "结果一"),
        user("好了吗"),
    ]
    # when made safe
    safe = api_safe(window)
    # then the unanswerable calls and their stray result are gone, the text stays
    assert [m.to_api() for m in safe] == [
        {"role": "user", "content": "查一下"},
        {"role": "assistant", "content": "我查一下。"},
        {"role": "user", "content": "好了吗"},
    ]


def test_parallel_calls_with_a_missing_result_and_no_text_are_dropped() -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, tool_result, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    call_1, call_2 = two_lookups()
    window = [user("查一下"), assistant(None, (call_1, call_2)), tool_result(call_2, "结果二")]

    assert api_safe(window) == [user("查一下")]


def test_tool_results_are_put_in_call_order() -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, tool_result, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    call_1, call_2 = two_lookups()
    call = assistant(None, (call_1, call_2))
    second, first = tool_result(call_2, "二"), tool_result(call_1, "一")

    safe = api_safe([user("查"), call, second, first])

    assert safe[1:] == [call, first, second]


def test_consecutive_user_messages_are_merged() -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    safe = api_safe([user("第一句"), user("第二句"), assistant("嗯")])

    assert [m.to_api() for m in safe] == [
        {"role": "user", "content": "第一句\n第二句"},
        {"role": "assistant", "content": "嗯"},
    ]


def test_consecutive_user_messages_with_an_image_are_merged_into_parts() -> None:
    from nonebot_plugin_aimemory.engine.messages import ImagePart, TextPart, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    image = ImagePart.from_source("https://e.x/cat.png")

    safe = api_safe([user("看"), user((TextPart("这只猫"), image))])

    assert safe == [user((TextPart("看"), TextPart("\n"), TextPart("这只猫"), image))]


def test_leading_assistant_messages_are_dropped() -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, tool_result, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    call_1, _ = two_lookups()
    question = user("你好")

    safe = api_safe(
        [assistant("我先说"), assistant(None, (call_1,)), tool_result(call_1, "x"), question]
    )

    assert safe == [question]


def test_assistant_without_content_or_calls_is_dropped() -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    question, answer = user("你好"), assistant("你好呀")

    assert api_safe([question, assistant(None), answer]) == [question, answer]


# --------------------------------------------------------------------------- Window


def sample_messages() -> list[Message]:
    from nonebot_plugin_aimemory.engine.messages import ToolCall, assistant, tool_result, user

    return [
        user("你好，今天天气怎么样？"),
        assistant(None, (ToolCall("call_1", "weather", '{"city":"北京"}'),)),
        tool_result(ToolCall("call_1", "weather", "{}"), "晴，25 度"),
        assistant("北京今天晴，25 度。"),
    ]


def counted_sum(window: Window, counter: EstimatingCounter) -> int:
    from nonebot_plugin_aimemory.engine.tokens import message_tokens

    return sum(message_tokens(m, counter) for m in window.messages)


def test_window_tokens_equal_the_sum_after_extend() -> None:
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter
    from nonebot_plugin_aimemory.engine.window import Window

    counter = EstimatingCounter()
    window = Window(counter, sample_messages()[:2])

    window.extend(sample_messages()[2:])

    assert len(window) == 4
    assert window.tokens == counted_sum(window, counter) > 0


def test_window_tokens_equal_the_sum_after_replace() -> None:
    from nonebot_plugin_aimemory.engine.messages import user
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter
    from nonebot_plugin_aimemory.engine.window import Window

    counter = EstimatingCounter()
    window = Window(counter, sample_messages())

    window.replace([user("总结：聊了天气")])

    assert len(window) == 1
    assert window.tokens == counted_sum(window, counter) > 0


def test_window_tokens_are_zero_after_clear() -> None:
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter
    from nonebot_plugin_aimemory.engine.window import Window

    window = Window(EstimatingCounter(), sample_messages())

    window.clear()

    assert window.messages == []
    assert window.tokens == 0


@st.composite
def growth(draw: st.DrawFn) -> tuple[list[list[Message]], int | None, list[Message]]:
    """A window grown by extends of raw chunks (a replace somewhere, maybe), and a tail."""
    batches = draw(st.lists(raw_windows(), max_size=5))
    replace_at = draw(st.one_of(st.none(), st.integers(0, max(0, len(batches) - 1))))
    tail = draw(raw_windows())
    return batches, replace_at, tail


@THOROUGH
@given(growth())
def test_the_window_kept_safe_as_it_grows_equals_api_safe_of_the_whole(
    grown: tuple[list[list[Message]], int | None, list[Message]],
) -> None:
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter
    from nonebot_plugin_aimemory.engine.window import Window, api_safe

    batches, replace_at, tail = grown
    window = Window(EstimatingCounter())
    for index, batch in enumerate(batches):
        if index == replace_at:
            window.replace(batch)
        else:
            window.extend(batch)
        # A request in between, as every turn makes one before it commits.
        assert window.api_safe_with(tail) == api_safe([*window.messages, *tail])

    assert window.api_safe_with(tail) == api_safe([*window.messages, *tail])


@PROPERTY
@given(valid_windows(), user_messages)
def test_a_turn_on_a_safe_window_reuses_its_messages(
    history: list[Message], message: Message
) -> None:
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter
    from nonebot_plugin_aimemory.engine.window import Window

    window = Window(EstimatingCounter())
    window.extend(history)

    request = window.api_safe_with([message])

    if not history or history[-1].role != "user":
        assert_untouched([*history, message], request)

"""Every cut the compressor can make leaves a window the strictest API accepts."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.test_window import assert_accepted, raw_windows, valid_windows

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.compressor import Compressor
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@functools.cache
def counter() -> EstimatingCounter:
    """The counter every cut is measured with."""
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter

    return EstimatingCounter()


def with_optional_summary(window: list[Message], summarised: bool) -> list[Message]:
    from nonebot_plugin_aimemory.engine.compressor import summary_messages
    from nonebot_plugin_aimemory.prompts import SUMMARY_PROMPTS

    return (
        [*summary_messages("事实：\n- 旧摘要", SUMMARY_PROMPTS), *window] if summarised else window
    )


def every_keep(window: list[Message]) -> range:
    from nonebot_plugin_aimemory.engine.tokens import message_tokens

    total = sum(message_tokens(m, counter()) for m in window)
    return range(0, total + 2, max(1, total // 25))


def summary_and_tails(window: list[Message]) -> Iterator[list[Message]]:
    """The window a fold leaves for every tail size: a new summary, then the kept tail."""
    from nonebot_plugin_aimemory.engine.compressor import (
        split_summary,
        summary_messages,
        tail_start,
    )
    from nonebot_plugin_aimemory.prompts import SUMMARY_PROMPTS

    _, body = split_summary(window, SUMMARY_PROMPTS)
    for keep in every_keep(body):
        yield [
            *summary_messages("新摘要", SUMMARY_PROMPTS),
            *body[tail_start(body, keep, counter()) :],
        ]


def offline_compressor() -> Compressor:
    """A compressor that never calls a model: only its truncation paths are used here."""
    from nonebot_plugin_aimemory.engine.compressor import CompressionPolicy, Compressor
    from nonebot_plugin_aimemory.prompts import SUMMARY_PROMPTS

    return Compressor(
        None,  # type: ignore[arg-type]
        counter(),
        CompressionPolicy.for_budget(1000),
        prompts=SUMMARY_PROMPTS,
    )


@PROPERTY
@given(valid_windows(), st.booleans())
def test_every_tail_of_a_valid_window_is_valid_without_repair(window, summarised) -> None:
    from nonebot_plugin_aimemory.engine.window import api_safe

    for new_window in summary_and_tails(with_optional_summary(window, summarised)):
        assert api_safe(new_window) == new_window
        assert_accepted(new_window)


@PROPERTY
@given(raw_windows(), st.booleans())
def test_every_tail_of_any_stored_window_is_valid_after_api_safe(window, summarised) -> None:
    from nonebot_plugin_aimemory.engine.window import api_safe

    for new_window in summary_and_tails(with_optional_summary(window, summarised)):
        assert_accepted(api_safe(new_window))


@PROPERTY
@given(valid_windows(), st.booleans())
def test_truncation_fallback_of_a_valid_window_is_valid_without_repair(window, summarised) -> None:
    from nonebot_plugin_aimemory.engine.window import api_safe

    compressor = offline_compressor()
    window = with_optional_summary(window, summarised)
    kept = compressor.truncate("g:1", window, reason="test").messages
    assert api_safe(kept) == kept
    assert_accepted(kept)
    assert len(kept) <= len(window)


@PROPERTY
@given(valid_windows(), st.booleans())
def test_truncation_to_a_tail_of_a_valid_window_is_valid_without_repair(window, summarised) -> None:
    from nonebot_plugin_aimemory.engine.window import api_safe

    compressor = offline_compressor()
    window = with_optional_summary(window, summarised)
    for keep in every_keep(window):
        kept = compressor.truncate_to_tail("g:1", window, keep, reason="test").messages
        assert api_safe(kept) == kept
        assert_accepted(kept)
        assert len(kept) <= len(window)


@PROPERTY
@given(raw_windows(), st.booleans())
def test_repeated_truncation_converges_to_a_valid_window(window, summarised) -> None:
    from nonebot_plugin_aimemory.engine.compressor import (
        CompressionPolicy,
        Compressor,
        split_summary,
    )
    from nonebot_plugin_aimemory.engine.window import api_safe
    from nonebot_plugin_aimemory.prompts import SUMMARY_PROMPTS

    compressor = Compressor(
        None,  # type: ignore[arg-type]
        counter(),
        CompressionPolicy.for_budget(1000),
        prompts=SUMMARY_PROMPTS,
    )
    current = with_optional_summary(window, summarised)
    for _ in range(12):
        current = compressor.truncate("g:1", current, reason="test").messages
        assert_accepted(api_safe(current))
    _, body = split_summary(current, SUMMARY_PROMPTS)
    assert body == [] or len(body) <= 2

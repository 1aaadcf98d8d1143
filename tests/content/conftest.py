"""Fixtures of the QQ-content tests: the image host and the OneBot side of the bot."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.content.helpers import QQBot, describing
from tests.fakes.image_server import ImageServer
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture(autouse=True)
def _model_answers(llm: FakeOpenAI) -> None:
    """The main model says 好的; a vision model, when configured, describes a cat."""
    llm.responder = describing()


@pytest.fixture
def images() -> Iterator[ImageServer]:
    with ImageServer() as server:
        yield server


@pytest.fixture
def qq() -> QQBot:
    return QQBot()

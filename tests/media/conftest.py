"""The models of the QQ-content tests: the main model says 好的; a vision model, when
configured, describes a cat."""

from __future__ import annotations

import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.qq import describing


@pytest.fixture(autouse=True)
def _model_answers(llm: FakeOpenAI) -> None:
    llm.responder = describing()

"""Engine fixtures: a real `httpx.AsyncClient` that records the bytes it sends, an
`LLMClient` pointed at the fake OpenAI server with timeouts small enough for tests, a real
SQLite history store, and `make_bot`, a `ChatBot` over both."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient
    from nonebot_plugin_aimemory.engine.tools import Tool
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore

    MakeBot = Callable[..., ChatBot]

MODEL = "m"
API_KEY = "sk-test"  # what the root conftest's `llm` server expects
KEY = "f:10001"  # the conversation `make_bot`'s bots hold
BUSY_TIMEOUT_MS = 200  # how long a write waits for a lock another program holds, not 5 s


@pytest.fixture
def sent_bodies() -> list[bytes]:
    """Raw request bodies, in the order the client sent them."""
    return []


@pytest.fixture
async def http(sent_bodies: list[bytes]) -> AsyncIterator[httpx.AsyncClient]:
    async def record(request: httpx.Request) -> None:
        sent_bodies.append(request.content)

    # trust_env=False: a proxy set in the environment must not see requests to 127.0.0.1.
    async with httpx.AsyncClient(trust_env=False, event_hooks={"request": [record]}) as client:
        yield client


@pytest.fixture
def endpoint(llm: FakeOpenAI) -> Endpoint:
    from nonebot_plugin_aimemory.engine.llm import Endpoint

    return Endpoint(api_base=llm.base_url, api_key=API_KEY, model=MODEL)


@pytest.fixture
def llm_client(http: httpx.AsyncClient, endpoint: Endpoint) -> LLMClient:
    from nonebot_plugin_aimemory.engine.llm import LLMClient

    return LLMClient(http, endpoint, timeout_seconds=0.5, max_retries=2, backoff_seconds=0.01)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "history.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[DatabaseHistoryStore]:
    """A real history store on a temporary SQLite file."""
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    database = await Database.open(db_path, busy_timeout_ms=BUSY_TIMEOUT_MS)
    yield DatabaseHistoryStore(database)
    await database.close()


@pytest.fixture
def make_bot(llm_client: LLMClient, store: DatabaseHistoryStore) -> MakeBot:
    """Makes a `ChatBot` for KEY with the given tools, over `llm_client` and `store`."""
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter
    from nonebot_plugin_aimemory.engine.tools import ToolRegistry

    def make(tools: Sequence[Tool] = ()) -> ChatBot:
        return ChatBot(
            KEY,
            llm=llm_client,
            store=store,
            counter=EstimatingCounter(),
            system_prompt="你是小忆。",
            tools=ToolRegistry(tools),
        )

    return make

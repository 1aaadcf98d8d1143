"""Start-up loads neither the tokenizer (tiktoken's ~25 MB, when `aimemory_tokenizer` is
cl100k) nor the segmenter (~33 MB): the first turn loads them off the event loop; numpy is
loaded by the first search of a chat log with vectors, never without them. Checked in a
fresh interpreter, since each is loaded once per process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_startup import run_python

REPORT_AFTER_START = (
    "import sys\n"
    "import anyio\n"
    "import nonebot\n"
    "from nonebot.adapters.onebot.v11 import Adapter\n"
    "nonebot.init()\n"
    "nonebot.get_driver().register_adapter(Adapter)\n"
    "nonebot.load_plugin('nonebot_plugin_aimemory')\n"
    "driver = nonebot.get_driver()\n"
    "def loaded(runtime):\n"
    "    segmenter = 'rjieba' in sys.modules or 'jieba' in sys.modules\n"
    "    return f'{runtime.counter.loaded} {segmenter} {\"tiktoken\" in sys.modules}'\n"
    "async def report():\n"
    "    from nonebot_plugin_aimemory.runtime import current_runtime\n"
    "    runtime = current_runtime()\n"
    "    print('AT START', loaded(runtime), flush=True)\n"
    "    await runtime.conversation.prepare()\n"
    "    print('BEFORE THE FIRST TURN', loaded(runtime), flush=True)\n"
    "    driver.exit()\n"
    "@driver.on_startup\n"
    "async def started():\n"
    "    driver.task_group.start_soon(report)\n"
    "nonebot.run()\n"
)


@pytest.mark.parametrize(
    ("tokenizer", "expected"),
    [
        # The estimate has nothing to load; tiktoken is never imported.
        ("estimate", ["AT START True False False", "BEFORE THE FIRST TURN True True False"]),
        ("cl100k", ["AT START False False False", "BEFORE THE FIRST TURN True True True"]),
    ],
)
def test_start_up_loads_no_tokenizer_or_segmenter_and_the_first_turn_loads_them(
    tmp_path: Path, tokenizer: str, expected: list[str]
) -> None:
    (tmp_path / "start.py").write_text(REPORT_AFTER_START)

    done = run_python(
        ["start.py"],
        tmp_path,
        AIMEMORY_API_KEY="sk-test",
        AIMEMORY_MODEL="gpt-4o-mini",
        AIMEMORY_MAX_CONTEXT_TOKENS="8192",
        AIMEMORY_DB_PATH=str(tmp_path / "aimemory.db"),
        AIMEMORY_TOKENIZER=tokenizer,
    )

    assert done.returncode == 0, done.stderr
    report = [line for line in done.stdout.splitlines() if line.startswith(("AT", "BEFORE"))]
    assert report == expected


NUMPY_AFTER_START = (
    "import sys\n"
    "import nonebot\n"
    "from nonebot.adapters.onebot.v11 import Adapter\n"
    "nonebot.init()\n"
    "nonebot.get_driver().register_adapter(Adapter)\n"
    "nonebot.load_plugin('nonebot_plugin_aimemory')\n"
    "driver = nonebot.get_driver()\n"
    "async def report():\n"
    "    from nonebot_plugin_aimemory.runtime import current_runtime\n"
    "    runtime = current_runtime()\n"
    "    await runtime.conversation.prepare()\n"
    "    vectors = type(runtime.chat_log.writer.vectors).__name__\n"
    "    print('NUMPY', vectors, 'numpy' in sys.modules, flush=True)\n"
    "    driver.exit()\n"
    "@driver.on_startup\n"
    "async def started():\n"
    "    driver.task_group.start_soon(report)\n"
    "nonebot.run()\n"
)


@pytest.mark.parametrize(
    ("chat_log_embeddings", "expected"),
    [("false", "NUMPY NoChatLogVectors False"), ("true", "NUMPY ChatLogVectors False")],
)
def test_numpy_is_not_imported_before_a_search_needs_it(
    tmp_path: Path, chat_log_embeddings: str, expected: str
) -> None:
    (tmp_path / "start.py").write_text(NUMPY_AFTER_START)

    done = run_python(
        ["start.py"],
        tmp_path,
        AIMEMORY_API_KEY="sk-test",
        AIMEMORY_MODEL="gpt-4o-mini",
        AIMEMORY_DB_PATH=str(tmp_path / "aimemory.db"),
        AIMEMORY_EMBEDDING_MODEL="multilingual-e5-small",
        # Nothing listens there: the start's backfill finds no server, which is fine.
        AIMEMORY_EMBEDDING_API_BASE="http://127.0.0.1:9/v1",
        AIMEMORY_CHAT_LOG_EMBEDDINGS=chat_log_embeddings,
    )

    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("NUMPY")] == [expected]

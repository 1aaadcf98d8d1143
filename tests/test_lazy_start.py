"""Start-up loads neither the tokenizer (tiktoken's ~25 MB, when `aimemory_tokenizer` is
cl100k) nor the segmenter (~33 MB): the first turn loads them off the event loop. Checked
in a fresh interpreter, since both are loaded once per process."""

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

"""Starting for real, in a child process: an invalid `AIMEMORY_*` value stops startup with
a message naming the key, whether the plugin is loaded by our bot.py or by any NoneBot."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOAD_AND_REPORT = (
    "import nonebot\n"
    "from nonebot.adapters.onebot.v11 import Adapter\n"
    "nonebot.init()\n"
    "nonebot.get_driver().register_adapter(Adapter)\n"
    "nonebot.load_plugin('nonebot_plugin_aimemory')\n"
    "print('STILL RUNNING')\n"
)


def run_python(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DRIVER": "~none",
        "LOCALSTORE_DATA_DIR": str(cwd / "data"),
        **env,
    }
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_an_invalid_value_stops_any_nonebot_that_loads_the_plugin(tmp_path: Path) -> None:
    result = run_python(["-c", LOAD_AND_REPORT], tmp_path, AIMEMORY_REQUEST_TIMEOUT="abc")

    assert result.returncode != 0
    assert "STILL RUNNING" not in result.stdout
    assert "aimemory_request_timeout" in result.stderr + result.stdout


def test_a_valid_configuration_loads(tmp_path: Path) -> None:
    result = run_python(["-c", LOAD_AND_REPORT], tmp_path, AIMEMORY_REQUEST_TIMEOUT="30")

    assert result.returncode == 0, result.stderr[-2000:]
    assert "STILL RUNNING" in result.stdout


def test_bot_py_refuses_to_start_with_an_invalid_value(tmp_path: Path) -> None:
    shutil.copy(ROOT / "bot.py", tmp_path / "bot.py")
    shutil.copy(ROOT / ".env.example", tmp_path / ".env.example")

    result = run_python(["bot.py"], tmp_path, AIMEMORY_COMPRESS_THRESHOLD="2")

    assert result.returncode != 0
    assert "aimemory_compress_threshold" in result.stderr + result.stdout
    assert (tmp_path / ".env").exists()  # first start still wrote the file to edit

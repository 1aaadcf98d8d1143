"""Starts, stops and restarts the plugin's runtime on a given database file and fake LLM,
the way NoneBot's startup and shutdown hooks do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.config import Config
    from nonebot_plugin_aimemory.runtime import Runtime

    from .openai_server import FakeOpenAI

TEST_DEFAULTS: dict[str, Any] = {
    "aimemory_api_key": "sk-test",
    "aimemory_model": "fake-model",
    "aimemory_request_timeout": 2.0,
    "aimemory_llm_max_retries": 1,
    "aimemory_janitor_interval_seconds": 3600,
    # The image server the reply tests link to is on 127.0.0.1.
    "aimemory_reply_image_allow_private": True,
    "aimemory_image_allow_private": True,
    # The guard role's model check adds a request to every shared save; the tests that
    # want it turn it on (tests/guard/test_model_check.py).
    "aimemory_guard_check": False,
    # The fake model answers at once and tests wait for background work right after a
    # turn; the lull local servers get is tested in tests/engine/test_model_traffic.py.
    "aimemory_background_lull_seconds": 0.0,
    # Sending a member's request again after background calls (engine/prompt_warmup.py)
    # would add requests to many tests' counts; tests/engine/test_prompt_warmup.py turns it on.
    "aimemory_prompt_warmup": False,
    # The fake model is on 127.0.0.1: the guard's check of a note a turn saves would wait
    # for the turn's end; tests/guard/test_check_after_turn.py turns that on.
    "aimemory_guard_check_after_turn": False,
}


class PluginHarness:
    """The plugin's runtime under test: real SQLite file, real HTTP to the fake LLM."""

    def __init__(self, db_path: str, llm: FakeOpenAI) -> None:
        self.db_path = db_path
        self.llm = llm
        self.overrides: dict[str, Any] = {}
        self.runtime: Runtime | None = None

    def config(self) -> Config:
        from nonebot_plugin_aimemory.config import Config

        values = {"aimemory_api_base": self.llm.base_url, **TEST_DEFAULTS, **self.overrides}
        values.setdefault("aimemory_db_path", self.db_path)
        return Config(**values)

    async def start(self, **overrides: Any) -> Runtime:
        """Stop whatever runtime is installed and start a fresh one (a real restart)."""
        self.overrides.update(overrides)
        await self._stop_installed()
        config = self.config()
        import nonebot_plugin_aimemory
        from nonebot_plugin_aimemory.runtime import Runtime, install_runtime

        runtime = await Runtime.start(
            config, config.aimemory_db_path, nonebot_plugin_aimemory.extensions
        )
        runtime.llm.backoff_seconds = 0.01
        install_runtime(runtime)
        self.runtime = runtime
        return runtime

    async def restart(self, **overrides: Any) -> Runtime:
        return await self.start(**overrides)

    async def stop(self) -> None:
        await self._stop_installed()
        self.runtime = None

    async def _stop_installed(self) -> None:
        from nonebot_plugin_aimemory.runtime import current_runtime, install_runtime

        installed = current_runtime()
        install_runtime(None)
        if installed is not None:
            await installed.stop()

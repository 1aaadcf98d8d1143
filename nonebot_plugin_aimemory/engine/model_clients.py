"""The chat clients of every model role, made alike: one connection pool, one usage meter,
the same timeout and retries, one account of who waits on each server; each role with its
output cap."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .llm import Endpoint, LLMClient
from .model_traffic import LULL_SECONDS, ModelTraffic
from .output_cap import ROLE_OUTPUT_TOKENS
from .shared_http import SharedHttp
from .usage import UsageMeter


class ModelClients:
    """Makes the client of a model role from its endpoint (`endpoint(role)`), and keeps one
    main-model client per model a persona names instead."""

    def __init__(
        self,
        http: SharedHttp,
        endpoint: Callable[[str], Endpoint],
        *,
        timeout_seconds: float,
        max_retries: int,
        meter: UsageMeter,
        background_lull_seconds: float = LULL_SECONDS,
        prompt_warmup: bool = True,
    ) -> None:
        self.http = http
        self.endpoint = endpoint
        self.timeout_seconds = timeout_seconds
        self.max_retries = max_retries
        self.meter = meter
        # Shared by every role's client: background roles give way to members' calls.
        self.traffic = ModelTraffic(background_lull_seconds, warm_up=prompt_warmup)
        self.main = self.for_role("main")
        self._by_model: dict[str, LLMClient] = {}

    def for_role(self, role: str, counted_as: str | None = None) -> LLMClient:
        """A chat client for a model role; its usage is counted under `counted_as`
        (default: the role)."""
        return self._client(self.endpoint(role), counted_as or role)

    def for_model(self, model: str | None) -> LLMClient:
        """The main model's client, or one for the model a persona names instead."""
        if not model or model == self.main.model:
            return self.main
        client = self._by_model.get(model)
        if client is None:
            endpoint = replace(self.endpoint("main"), model=model)
            client = self._by_model[model] = self._client(endpoint, "main")
        return client

    def _client(self, endpoint: Endpoint, role: str) -> LLMClient:
        return LLMClient(
            self.http,
            endpoint,
            timeout_seconds=self.timeout_seconds,
            max_retries=self.max_retries,
            role=role,
            meter=self.meter,
            traffic=self.traffic,
            max_output_tokens=ROLE_OUTPUT_TOKENS.get(role, ROLE_OUTPUT_TOKENS["main"]),
        )

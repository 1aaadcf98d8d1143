"""How many tokens one call may write, and in which request field. The cap stops a model
that loops on its own words, which on a CPU server runs for minutes while the member's
next answer waits behind it on the server's one slot. A background writer's JSON needs a
few hundred tokens; a thinking model writes its reasoning first, and some providers count
it in the cap. So the background roles ask for what their answer needs until the model is
seen thinking (a `reasoning_content`, a `<think>` block), and from then on for the
thinking allowance; an answer cut while thinking is asked for again under it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from .errors import LLMError

logger = logging.getLogger("nonebot_plugin_aimemory")

# Each role's cap for a thinking model, in tokens: several times what the role writes (a
# reply within AIMEMORY_REPLY_MAX_CHARS, a summary within its cap, a few JSON operations),
# with room for reasoning where the provider counts it in.
ROLE_OUTPUT_TOKENS = {
    "main": 4096,
    "compressor": 3072,
    "extractor": 2048,
    "reviewer": 2048,
    "vision": 1024,
    # One word, or a thinking model's reasoning before it.
    "guard": 512,
}
# ... and what a model answering straight away needs: the reviewer's three operations and
# the extractor's ten facts at most, pretty-printed in a code fence as small models write
# them. The real 1.5B model's review looped to 2 048 tokens, 157 s on two cores.
ROLE_ANSWER_TOKENS = {"reviewer": 768, "extractor": 1024}
# A provider that refuses the cap's field names the next one to try (OpenAI's reasoning
# models refuse `max_tokens` and want `max_completion_tokens`); after that, no cap.
_NEXT_FIELD = {"max_tokens": "max_completion_tokens"}
# LLMError.code of an answer that had only begun its reasoning when the cap cut it.
CUT_WHILE_THINKING = "cut_while_thinking"


@dataclass
class OutputCap:
    """One client's output cap: its role's, the request field it goes in, and whether the
    model was seen thinking. `thinking_tokens` None: no cap at all."""

    role: str
    thinking_tokens: int | None
    field: str | None = "max_tokens"
    model_thinks: bool = False

    @property
    def tokens(self) -> int | None:
        """The cap the next request sends."""
        if self.thinking_tokens is None or self.model_thinks:
            return self.thinking_tokens
        return min(ROLE_ANSWER_TOKENS.get(self.role, self.thinking_tokens), self.thinking_tokens)

    def fields(self) -> dict[str, int]:
        """The request field holding the cap (none when there is no cap, or no field)."""
        tokens = self.tokens
        return {self.field: tokens} if tokens is not None and self.field is not None else {}

    def saw_thinking(self, model: str) -> bool:
        """Note that the model thinks; whether the cap grew by it (an answer cut under the
        smaller one is worth asking for again)."""
        before = self.tokens
        self.model_thinks = True
        grew = self.tokens != before
        if grew:
            logger.info(
                "%s model=%s thinks before answering: output cap %s -> %s tokens",
                self.role,
                model,
                before,
                self.tokens,
            )
        return grew

    def refused(self, error: LLMError, model: str) -> bool:
        """After a 400 that names the cap's field, use the next field (or none); whether
        the request is worth sending again."""
        if self.field is None or self.thinking_tokens is None or error.status != 400:
            return False
        said = f"{error.provider_message or ''} {error.detail}"
        if self.field not in said:
            return False
        refused, self.field = self.field, _NEXT_FIELD.get(self.field)
        logger.warning(
            "%s model=%s refuses %s; the output cap goes in %s",
            self.role,
            model,
            refused,
            self.field or "no field",
        )
        return True

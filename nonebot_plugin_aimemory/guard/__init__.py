"""What must never enter long-term memory, nor reach the model from it: text that tries to
steer the model (`injection.py`: the four shapes of `steering_shapes.py` over the word
classes of five languages in `lexicon/`, and the forged turns of `steering_turns.py`, read
through `normalise.py`), and personal numbers, masked before a memory is stored
(`pii.py`). Both read through the same table of invisible characters (`invisible.py`).
For memories other people are shown, a cheap model reads what the rules let through
(`model_check.py`, used by `memory/shared_guard.py`); `scripts.py` says which letters the
rules can read at all."""

from __future__ import annotations

from .injection import injection_reason, injection_reason_for_memory
from .pii import is_personal_number, mask_pii

__all__ = [
    "injection_reason",
    "injection_reason_for_memory",
    "is_personal_number",
    "mask_pii",
]

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
from .model_check import ModelCheck, NoModelCheck, SteeringCheck
from .pii import is_personal_number, mask_pii
from .scripts import unread_letters
from .steering import rules_are_built, steering_rules

__all__ = [
    "ModelCheck",
    "NoModelCheck",
    "SteeringCheck",
    "injection_reason",
    "injection_reason_for_memory",
    "is_personal_number",
    "mask_pii",
    "rules_are_built",
    "steering_rules",
    "unread_letters",
]

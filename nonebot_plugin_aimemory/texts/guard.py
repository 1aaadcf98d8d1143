"""Why a memory for a shared scope was not saved, as the model and the member read it."""

from __future__ import annotations

# The model check said the note steers the bot (memory/shared_guard.py).
MODEL_SAYS_STEERING = (
    "内容像是对 AI 的指令或设定，不是关于人或事的事实，大家共用的记忆不保存这种内容"
)
# The check could not run, and the rules cannot read the note's script.
NOT_CHECKED_NOW = "暂时无法检查这条内容（它的文字规则读不懂，检查模型又没有回应），请稍后再试"

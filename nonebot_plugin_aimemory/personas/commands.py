"""`~人设` commands: see which personas exist and which one this chat plays, and switch. In
a group only its owner, admins and the SUPERUSERS may switch; in private chat, the person."""

from __future__ import annotations

from .. import texts
from .choices import Personas


class PersonaCommands:
    """`~人设 列表 | 当前 | 切换 <名字>` in one chat."""

    def __init__(self, personas: Personas) -> None:
        self.personas = personas

    async def run(self, chat_key: str, action: str, argument: str, *, may_switch: bool) -> str:
        """The answer to `~人设 <action> <argument>` sent in `chat_key`."""
        personas = self.personas
        if action == "列表" and not argument:
            await personas.catalog.reload()
            return texts.persona_list(personas.catalog.names(), personas.current(chat_key).name)
        if action == "当前" and not argument:
            await personas.catalog.reload()
            return texts.persona_current(personas.current(chat_key).name)
        if action == "切换" and argument:
            if not may_switch:
                return texts.PERMISSION_DENIED
            switch = await personas.switch(chat_key, argument)
            if switch.status == "missing":
                return texts.persona_missing(argument, switch.current.name)
            if switch.status == "unchanged":
                return texts.persona_unchanged(switch.current.name)
            return texts.persona_switched(switch.current.name)
        return texts.PERSONA_USAGE

"""The persona each chat plays survives a reopen of the database."""

from __future__ import annotations


async def test_a_chosen_persona_survives_reopening_and_can_be_forgotten(open_backend) -> None:
    from nonebot_plugin_aimemory.store.persona_store import PersonaStore

    database = await open_backend()
    try:
        store = PersonaStore(database)
        await store.choose("g:1", "学习助手")
        await store.choose("g:1", "猫娘")
        await store.choose("f:2", "学习助手")
    finally:
        await database.close()

    database = await open_backend()
    try:
        store = PersonaStore(database)
        assert await store.load_all() == {"g:1": "猫娘", "f:2": "学习助手"}
        await store.forget("g:1")
        assert await store.load_all() == {"f:2": "学习助手"}
    finally:
        await database.close()

"""Cached image descriptions on both backends."""

from __future__ import annotations

HASH = "a" * 64


async def test_a_description_is_cached_and_overwritten(any_database) -> None:
    from nonebot_plugin_aimemory.store.image_store import ImageDescriptionStore

    store = ImageDescriptionStore(any_database)

    missing = await store.get(HASH)
    await store.put(HASH, "一只猫")
    first = await store.get(HASH)
    await store.put(HASH, "一只橘猫，100% 可爱")
    second = await store.get(HASH)

    assert (missing, first, second) == (None, "一只猫", "一只橘猫，100% 可爱")

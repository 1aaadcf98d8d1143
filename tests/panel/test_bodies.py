"""What the memory writes accept and how they refuse, kept as they were before the routes
moved to FastAPI's dependencies: the checks answer in a fixed order (who asks before what
the body says), any content type carries JSON, and each wrong field has its own reason."""

from __future__ import annotations

import pytest

from tests.panel.conftest import BASE, PANEL_TOKEN


def reason(name: str) -> str:
    """A reason the panel answers with, from texts.py (imported once NoneBot is set up)."""
    from nonebot_plugin_aimemory import texts

    return getattr(texts, name)


BEARER = {"Authorization": f"Bearer {PANEL_TOKEN}"}
MEMORIES = f"{BASE}/api/chats/g:111/memories"


async def test_a_malformed_body_without_auth_is_answered_401_not_400(anonymous) -> None:
    response = await anonymous.post(MEMORIES, content=b"{")

    assert response.status_code == 401


async def test_a_malformed_body_with_a_wrong_token_still_counts_as_a_failure(anonymous) -> None:
    wrong = {"Authorization": "Bearer not-the-token-at-all"}
    for _ in range(5):
        await anonymous.post(MEMORIES, content=b"{", headers=wrong)

    then = await anonymous.get(f"{BASE}/api/chats", headers=BEARER)

    assert then.status_code == 429


@pytest.mark.parametrize("raw", [b"{", b"[]", b"null", b'"text"', b"\xff\xfe"])
async def test_a_body_that_is_no_json_object_is_a_bad_request(anonymous, raw: bytes) -> None:
    response = await anonymous.post(MEMORIES, content=raw, headers=BEARER)

    assert response.status_code == 400
    assert response.json() == {"error": "bad_request", "reason": reason("PANEL_BAD_JSON")}
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
async def test_json_is_read_whatever_the_content_type_says(anonymous, content_type: str) -> None:
    response = await anonymous.post(
        MEMORIES,
        content='{"content": "小明喜欢猫"}'.encode(),
        headers={**BEARER, "Content-Type": content_type},
    )

    assert response.status_code == 201


@pytest.mark.parametrize(
    ("body", "reason_name"),
    [
        ({}, "PANEL_CONTENT_NEEDED"),
        ({"content": 5}, "PANEL_CONTENT_NEEDED"),
        ({"content": None, "tags": 5}, "PANEL_CONTENT_NEEDED"),
        ({"content": "小明喜欢猫", "tags": 5}, "PANEL_TAGS_LIST"),
        ({"content": "小明喜欢猫", "tags": {"a": 1}}, "PANEL_TAGS_LIST"),
    ],
)
async def test_a_wrong_field_is_refused_with_its_reason(anonymous, body, reason_name: str) -> None:
    response = await anonymous.post(MEMORIES, json=body, headers=BEARER)

    assert response.status_code == 400
    assert response.json() == {"error": "bad_request", "reason": reason(reason_name)}


async def test_tags_may_be_a_comma_string_and_unknown_fields_are_ignored(anonymous) -> None:
    response = await anonymous.post(
        MEMORIES,
        json={"content": "小明周末去钓鱼", "tags": "户外，钓鱼, ,周末", "colour": "red"},
        headers=BEARER,
    )

    assert response.status_code == 201
    assert response.json()["tags"] == ["户外", "钓鱼", "周末"]


async def test_an_edit_of_an_unknown_memory_is_404_before_its_fields_are_read(anonymous) -> None:
    response = await anonymous.patch(f"{MEMORIES}/zzzz", json={"content": 5}, headers=BEARER)

    assert response.status_code == 404


async def test_an_empty_edit_body_changes_nothing(anonymous) -> None:
    saved = (
        await anonymous.post(MEMORIES, json={"content": "小明喜欢蓝色"}, headers=BEARER)
    ).json()

    response = await anonymous.patch(f"{MEMORIES}/{saved['id']}", content=b"", headers=BEARER)

    assert response.status_code == 200
    assert response.json()["content"] == "小明喜欢蓝色"


async def test_privacy_is_read_by_truthiness_on_a_personal_memory(plugin, anonymous) -> None:
    service = plugin.runtime.memory.service
    memory = (await service.save("u:3001", "我对花粉过敏", user_id="3001", private=True)).memory
    url = f"{BASE}/api/chats/u:3001/memories/{memory.id}"

    made_public = await anonymous.patch(url, json={"private": 0}, headers=BEARER)
    made_private = await anonymous.patch(url, json={"private": "yes"}, headers=BEARER)

    assert made_public.json()["private"] is False
    assert made_private.json()["private"] is True


async def test_privacy_on_a_chats_memory_is_refused(anonymous) -> None:
    saved = (
        await anonymous.post(MEMORIES, json={"content": "小明喜欢蓝色"}, headers=BEARER)
    ).json()

    response = await anonymous.patch(
        f"{MEMORIES}/{saved['id']}", json={"private": True}, headers=BEARER
    )

    assert response.status_code == 400
    assert response.json()["reason"] == reason("PANEL_PRIVATE_ONLY")


@pytest.mark.parametrize("query", ["limit=abc", "limit=-3"])
async def test_a_malformed_chat_log_limit_is_no_422(anonymous, query: str) -> None:
    response = await anonymous.get(f"{BASE}/api/chats/g:111/chatlog?{query}", headers=BEARER)

    assert response.status_code == 200

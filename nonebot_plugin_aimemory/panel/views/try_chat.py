"""The try page's answers: its test chats and members, a message's body read and sent
through the conversation (trychat/), the answer with what the turn did (the memories put
before the message, each tool call and its result, the provider's error), and a clearing.
A scope that is not one of the test chats is refused (404) before anything else."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, StrictStr, ValidationError

from ... import texts
from ...engine import TurnFailure, TurnTrace
from ...onebot import MAX_PASTE_CHARS
from ...scopes import Scope
from ...trychat import MEMBERS, TEST_GROUP, chat_title, is_test_chat, speakers_of
from ...trychat.chat import PageAnswer, TryChat
from ...trychat.clearing import clear_test_chat
from ...trychat.inbound import BOT, PageMessage, Quote
from .errors import bad_request, refusal

if TYPE_CHECKING:
    from collections.abc import Collection

    from ...runtime import Runtime


class QuoteBody(BaseModel):
    """`{"speaker": "<member id>" | "bot", "text": "…"}`: the message a reply quotes."""

    speaker: StrictStr
    text: StrictStr


class MessageBody(BaseModel):
    """`{"speaker": "<member id>", "text": "…", "at"?: [...], "reply"?: {...}}`."""

    speaker: StrictStr
    text: StrictStr
    at: list[StrictStr] = []
    reply: QuoteBody | None = None


def try_chat_scope(scope: Scope) -> Scope:
    """The scope, when it is one of the try page's chats; 404 otherwise (a real chat is
    never reached through the try page)."""
    if not is_test_chat(scope) or scope.persona is not None:
        raise refusal(404, "not_a_test_chat", texts.TRY_NOT_A_TEST_CHAT)
    return scope


def setup(runtime: Runtime, nicknames: Collection[str]) -> dict[str, Any]:
    """What the page is built from: the chats, the members, the bot's name, the limits."""
    return {
        "bot_name": next(iter(sorted(nicknames)), "") or "机器人",
        "nicknames": sorted(nicknames),
        "group": {"scope": TEST_GROUP.key, "name": chat_title(TEST_GROUP)},
        "members": [
            {
                "id": m.user_id,
                "name": m.name,
                "role": m.role.value,
                "role_label": m.role.label,
                "private_chat": m.private_chat.key,
            }
            for m in MEMBERS
        ],
        "max_message_chars": MAX_PASTE_CHARS,
        "configured": runtime.config.configured,
        "model": runtime.llm.model,
    }


def page_message(chat: Scope, body: dict[str, Any]) -> PageMessage:
    """The body as a message of `chat`, or 400 saying what is wrong with it."""
    try:
        parsed = MessageBody.model_validate(body)
    except ValidationError:
        raise bad_request(texts.TRY_BAD_MESSAGE) from None
    speakers = {m.user_id: m for m in speakers_of(chat)}
    speaker = speakers.get(parsed.speaker)
    if speaker is None:
        raise bad_request(texts.TRY_BAD_SPEAKER)
    named = {BOT, *speakers} if chat.is_group else set()
    reply = parsed.reply
    if reply is not None and reply.speaker not in {BOT, *speakers}:
        raise bad_request(texts.TRY_BAD_SPEAKER)
    return PageMessage(
        chat=chat,
        speaker=speaker,
        text=parsed.text,
        at=tuple(dict.fromkeys(user_id for user_id in parsed.at if user_id in named)),
        quote=Quote(reply.speaker, reply.text) if reply is not None else None,
    )


async def send(
    runtime: Runtime, chat: Scope, body: dict[str, Any], nicknames: Collection[str]
) -> dict[str, Any]:
    """Send the message through the conversation; the answer as the page shows it."""
    message = page_message(chat, body)
    config = runtime.config
    trying = TryChat(
        runtime.conversation,
        max_chars=config.aimemory_reply_max_chars,
        max_parts=config.aimemory_reply_max_parts,
        nicknames=nicknames,
    )
    answer = await trying.send(message)
    return answer_json(answer, runtime.usage.today_total(chat.chat_key))


def answer_json(answer: PageAnswer, tokens_today: int) -> dict[str, Any]:
    """An answer as the API shows it."""
    return {
        "messages": answer.texts,
        "from_model": answer.from_model,
        "addressed": answer.addressed,
        "command": answer.command,
        "cut_chars": answer.cut_chars,
        "details": trace_json(answer.trace),
        "tokens_today": tokens_today,
    }


def trace_json(trace: TurnTrace) -> dict[str, Any]:
    """What the turn did: the memories block, the tool calls, the failure."""
    return {
        "memories": trace.memories,
        "tools": [
            {"name": use.name, "arguments": use.arguments, "result": use.result}
            for use in trace.tools
        ],
        "failure": failure_json(trace.failure) if trace.failure is not None else None,
    }


def failure_json(failure: TurnFailure) -> dict[str, Any]:
    """The provider's error, with the page's sentence for it."""
    return {
        "model": failure.model,
        "kind": failure.kind,
        "status": failure.status,
        "code": failure.code,
        "message": failure.message,
        "text": texts.try_failure(
            model=failure.model,
            kind=failure.kind,
            status=failure.status,
            code=failure.code,
            message=failure.message,
        ),
    }


async def clear(runtime: Runtime, chat: Scope) -> dict[str, int]:
    """Clear the test chat; what went."""
    cleared = await clear_test_chat(runtime, chat)
    return {
        "windows": cleared.windows,
        "memories": cleared.memories,
        "chat_log_rows": cleared.chat_log_rows,
    }

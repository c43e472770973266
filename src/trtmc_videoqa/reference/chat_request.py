"""Validate a chat-completions body: text plus exactly one video_url part in the user message, nothing else; or
text alone (a plain string or text parts), which the endpoint answers without a task, as a video-capable chat server
answers a question with no clip.

Unknown top-level keys (temperature, extra inputs) are ignored, as a lenient OpenAI server would, and recorded;
content parts
are strict, because a part the endpoint silently dropped would make its answer about a different request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import RequestRejected, json_body

ACCEPTED_PARTS = "text parts and exactly one video_url part"


class _TextPart(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["text"]
    text: str


class _VideoUrl(BaseModel):
    model_config = ConfigDict(extra="ignore")
    url: str = Field(min_length=1)


class _VideoUrlPart(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["video_url"]
    video_url: _VideoUrl


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: str
    content: str | list[dict[str, Any]]


class _ChatBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    messages: list[_Message] = Field(min_length=1, max_length=2)
    model: str | None = None
    stream: bool = False
    n: int = 1
    max_tokens: int | None = Field(default=None, gt=0)
    max_completion_tokens: int | None = Field(default=None, gt=0)


@dataclass(frozen=True)
class ChatRequest:
    model: str | None
    question_text: str  # the user's text parts, joined by newlines
    video_url: str | None  # None: a text-only request
    max_tokens: int | None  # the smaller of max_tokens / max_completion_tokens when both are given
    stream: bool  # answered in server-sent events (only where the endpoint's stream setting allows it)
    body_fields: dict[str, Any] = field(default_factory=dict)  # every top-level field but model and messages


def _validation_message(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in problem['loc']) or 'body'}: {problem['msg']}" for problem in error.errors()
    )


def _user_parts(parts: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    texts: list[str] = []
    videos: list[str] = []
    for position, part in enumerate(parts):
        part_type = part.get("type") if isinstance(part, dict) else None
        try:
            if part_type == "text":
                texts.append(_TextPart.model_validate(part).text)
            elif part_type == "video_url":
                videos.append(_VideoUrlPart.model_validate(part).video_url.url)
            else:
                raise RequestRejected(
                    400,
                    f"unsupported content part type {part_type!r} at messages[-1].content[{position}]; "
                    f"the reference endpoint accepts {ACCEPTED_PARTS}",
                )
        except ValidationError as error:
            raise RequestRejected(
                400, f"malformed {part_type} part at content[{position}]: {_validation_message(error)}"
            ) from error
    return texts, videos


def _check_system(message: _Message) -> None:
    if message.role != "system":
        raise RequestRejected(400, f"with two messages the first must be 'system', got {message.role!r}")
    if isinstance(message.content, list):
        for position, part in enumerate(message.content):
            if not isinstance(part, dict) or part.get("type") != "text":
                part_type = part.get("type") if isinstance(part, dict) else None
                raise RequestRejected(
                    400,
                    f"unsupported content part type {part_type!r} in the system message at content[{position}]; "
                    "a system message takes text only",
                )


def parse_chat_request(body: bytes, *, stream_allowed: bool = False) -> ChatRequest:
    """The request, checked; stream=true is refused unless `stream_allowed` (the endpoint's stream setting)."""
    raw = json_body(body)
    try:
        chat = _ChatBody.model_validate(raw)
    except ValidationError as error:
        raise RequestRejected(400, f"invalid chat request: {_validation_message(error)}") from error
    if chat.stream and not stream_allowed:
        raise RequestRejected(400, "stream=true is not supported (like trtmc-server); send stream=false")
    if chat.n != 1:
        raise RequestRejected(400, f"n={chat.n} is not supported; only n=1")
    if len(chat.messages) == 2:
        _check_system(chat.messages[0])
    user = chat.messages[-1]
    if user.role != "user":
        raise RequestRejected(400, f"the last message must be from 'user', got {user.role!r}")
    texts, videos = ([user.content], []) if isinstance(user.content, str) else _user_parts(user.content)
    if len(videos) > 1:
        raise RequestRejected(400, f"the user message has {len(videos)} video_url parts; it takes at most one")
    if not any(text.strip() for text in texts):
        raise RequestRejected(400, "the user message has no text part with the question")
    limits = [limit for limit in (chat.max_tokens, chat.max_completion_tokens) if limit is not None]
    return ChatRequest(
        model=chat.model,
        question_text="\n".join(texts),
        video_url=videos[0] if videos else None,
        max_tokens=min(limits) if limits else None,
        stream=chat.stream,
        body_fields={key: value for key, value in raw.items() if key not in ("model", "messages")},
    )

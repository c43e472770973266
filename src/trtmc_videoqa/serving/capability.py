"""The capability check: one real clip-plus-question request to the served model, before any measurement.

A rejection (4xx) is evidence that the server or model cannot take video, and makes the row `unsupported`.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import httpx
from pydantic import BaseModel

from ..media.payload import chat_request_body, check_body_limit, encode_body, video_data_url

CHAT_PATH = "/v1/chat/completions"
_EXCERPT = 500


class CapabilityResult(BaseModel):
    accepted: bool
    rejected: bool  # the server answered, and said no (4xx)
    http_status: int | None
    request_id: str
    latency_ms: float
    answer: str | None = None
    detail: str = ""
    served_by: str | None = None
    response_fields: dict[str, object] = {}


def check_capability(url: str, model: str, clip: Path, question: str, *, max_tokens: int, timeout_s: float,
                     body_limit: int, api_key: str | None = None) -> CapabilityResult:
    body = chat_request_body(model, question, video_data_url(clip), max_tokens=max_tokens)
    content = encode_body(body)
    check_body_limit(len(content), body_limit, clip=clip)
    request_id = f"capability-{uuid.uuid4()}"
    headers = {"Content-Type": "application/json", "X-Request-ID": request_id}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    start = time.perf_counter()
    try:
        with httpx.Client(timeout=timeout_s, trust_env=False) as client:
            response = client.post(url.rstrip("/") + CHAT_PATH, content=content, headers=headers)
    except httpx.HTTPError as error:
        return CapabilityResult(accepted=False, rejected=False, http_status=None, request_id=request_id,
                                latency_ms=(time.perf_counter() - start) * 1000,
                                detail=f"no answer from {url}: {type(error).__name__}: {error}")
    latency = (time.perf_counter() - start) * 1000
    served_by = response.headers.get("x-served-by")
    text = response.text[:_EXCERPT]
    if response.status_code != 200:
        return CapabilityResult(accepted=False, rejected=400 <= response.status_code < 500,
                                http_status=response.status_code, request_id=request_id, latency_ms=latency,
                                detail=f"HTTP {response.status_code}: {text}", served_by=served_by)
    try:
        data = response.json()
        answer = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return CapabilityResult(accepted=False, rejected=False, http_status=200, request_id=request_id,
                                latency_ms=latency, detail=f"not a chat completion: {text}", served_by=served_by)
    extra = {k: v for k, v in data.items() if k not in {"id", "object", "created", "model", "choices", "usage"}}
    # The fingerprint says more than the header (a test double says so there); keep whichever the server gave.
    served_by = data.get("system_fingerprint") or served_by
    ok = isinstance(answer, str) and bool(answer.strip())
    return CapabilityResult(accepted=ok, rejected=False, http_status=200, request_id=request_id, latency_ms=latency,
                            answer=answer if isinstance(answer, str) else None,
                            detail="answered" if ok else "HTTP 200 with an empty answer", served_by=served_by,
                            response_fields=extra)

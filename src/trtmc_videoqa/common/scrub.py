"""Secrets kept out of artifacts: which values are secrets, and their replacement in files we keep."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from .atomic_write import write_bytes_atomic

M = TypeVar("M", bound=BaseModel)
REDACTED = "<redacted>"
# The environment variable a server we start reads its API key from (never its argv).
SERVER_TOKEN_ENV = "TRTMC_SERVE_TOKEN"
# Environment variables whose values are secrets wherever they turn up (hub tokens, the server's API key).
SECRET_ENVS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", SERVER_TOKEN_ENV)


# A base64 run cut out of a longer encoding is searched only from this many characters: a shorter one would hit
# by chance inside the report's embedded images (64**16 is far past any file's length).
MIN_INNER_BASE64 = 16


def known_secrets(*given: str | None) -> list[str]:
    """The secrets given (the server's API key), and the environment's tokens when they look like tokens (a value
    of a few characters would be replaced all over the artifacts), each with the forms it is echoed in
    (`secret_forms`)."""
    from_env = [os.environ.get(name) or "" for name in SECRET_ENVS]
    plain = [value for value in given if value] + [value for value in from_env if len(value) >= 8]
    return list(dict.fromkeys(form for value in plain for form in secret_forms(value)))


def secret_forms(secret: str) -> list[str]:
    """`secret` as written and as a server may echo it: URL-encoded, hex (either case), and base64 (standard and
    URL-safe, padding or not) of the value alone and of `Bearer <value>` (an Authorization header echoed), plus
    the base64 characters the value fixes wherever it stands inside a longer base64 text (at each of the three
    alignments), where those are long enough to name it."""
    raw = secret.encode()
    forms = [secret, quote(secret, safe=""), raw.hex(), raw.hex().upper()]
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for prefix in (b"", b"Bearer "):
            forms.append(encode(prefix + raw).decode().rstrip("="))
        for shift in range(3):
            inner = _inner_base64(encode, raw, shift)
            if len(inner) >= MIN_INNER_BASE64:
                forms.append(inner)
    return list(dict.fromkeys(forms))


def _inner_base64(encode: Callable[[bytes], bytes], raw: bytes, shift: int) -> str:
    """The base64 characters that depend on `raw`'s bytes alone when `shift` bytes come before it: a sequence every
    encoding of a text holding `raw` at that alignment contains."""
    text = encode(b"\0" * shift + raw).decode()
    start = -(-shift * 4 // 3)  # the first character no padding byte reaches
    whole = (shift + len(raw)) // 3 * 4  # the characters of whole 3-byte groups; the last group's may be cut
    end = whole if (shift + len(raw)) % 3 else len(text)
    return text[start:end] if end > start else ""


def scrub_secrets(paths: list[Path], secrets: list[str]) -> None:
    """Replace every known secret value in these text files (logs of tools we ran) by a placeholder, in place."""
    values = sorted({s for s in secrets if s}, key=len, reverse=True)
    if not values:
        return
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:  # gone, a directory, or not ours to read: nothing of ours to scrub there
            continue
        cleaned = data
        for value in values:
            cleaned = cleaned.replace(value.encode(), REDACTED.encode())
        if cleaned != data:
            write_bytes_atomic(path, cleaned)


def scrubbed_model(model: M, secrets: list[str]) -> M:
    """`model` with every known secret replaced in each of its strings: what a row carries in memory (answers read
    before AIPerf's exports were scrubbed, a stage's excerpt of an answer) is written as its files were scrubbed."""
    values = sorted({s for s in secrets if s}, key=len, reverse=True)
    if not values:
        return model

    def scrubbed(text: str) -> str:
        for secret in values:
            text = text.replace(secret, REDACTED)
        return text

    return with_strings(model, scrubbed)


def with_strings(model: M, change: Callable[[str], str]) -> M:
    """`model` again, `change` applied to every string value it holds (its JSON form, validated back): the one walk
    both the secret scrub and the report's public rewrite make."""
    return type(model).model_validate(_changed(model.model_dump(mode="json"), change))


def _changed(value: object, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_changed(item, change) for item in value]
    if isinstance(value, dict):
        return {key: _changed(item, change) for key, item in value.items()}
    return value

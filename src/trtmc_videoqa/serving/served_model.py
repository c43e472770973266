"""Which model the server says it served, beside the one asked for (--model): the one rule that compares names, and
the bounded read of GET /v1/models that the capability check asks when the answers do not settle it.

Two names are the same model when they are equal once a trailing `@<revision>` is left out (`transformers serve`
answers `org/name@main` for the hub id `org/name`); where both name a revision, the revisions must agree too. A name
that is a local folder (absolute, `./`, `../`, `~`, or a folder that exists here) is compared as its absolute path,
so `--model ./models/x` is the server's `/home/u/models/x`, and the reverse. Names are compared, never rewritten:
what the row records is what the server said.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..common.server_json import parse_server_json
from ..results import ServedModel, ServedModelVerdict
from .bounded_http import (
    REQUEST_ERRORS,
    BoundedClient,
)

MODELS_PATH = "/v1/models"
MODEL_KEPT = 300  # characters of one model name kept (a local folder's path may be long)
LISTED_KEPT = 20  # model ids of /v1/models kept (a server unpinned may list its whole cache)
LISTING_BYTES = 1 << 20  # bytes of /v1/models read at most
LISTING_TIMEOUT_S = 10.0
_PATH_STARTS = ("/", "./", "../", "~")


def kept_name(name: str) -> str:
    """A server's model name as a row keeps it: at most MODEL_KEPT characters."""
    return name if len(name) <= MODEL_KEPT else name[: MODEL_KEPT - 3] + "..."


def _compared(name: str, cwd: Path) -> tuple[str, str | None]:
    """(the name as compared, its revision or None): a local folder's absolute path, or a hub-style id without its
    trailing `@<revision>` (an `@` in a path is part of the path, as transformers serve reads it)."""
    text = name.strip()
    if text.startswith(_PATH_STARTS) or (text and (cwd / text).is_dir()):
        return os.path.normpath(os.path.join(cwd, os.path.expanduser(text))), None
    base, at, revision = text.rpartition("@")
    if at and base and revision and "/" not in revision:
        return base, revision
    return text, None


def same_model(asked: str, named: str, cwd: Path) -> bool:
    """Whether the server's `named` model is the `asked` one (--model), by the module's rule."""
    (a, a_revision), (n, n_revision) = _compared(asked, cwd), _compared(named, cwd)
    return a == n and (a_revision is None or n_revision is None or a_revision == n_revision)


def judge_served_model(
    asked: str,
    answered: Sequence[str],
    listed: list[str] | None = None,
    listed_note: str | None = None,
    *,
    cwd: Path,
) -> ServedModel:
    """What the server's names say, beside --model. The chat answers decide where they name a model: every name
    must be --model. Where they name none, a /v1/models list that does not hold --model names another model; a
    server that names none anywhere is recorded as such (`unnamed`), never failed for it."""
    names = list(dict.fromkeys(kept_name(name) for name in answered if name.strip()))
    others = [name for name in names if not same_model(asked, name, cwd)]
    shown = None
    if listed is not None:  # all of them compared; the first LISTED_KEPT kept
        extra = [f"and {len(listed) - LISTED_KEPT} more"] if len(listed) > LISTED_KEPT else []
        shown = listed[:LISTED_KEPT] + extra
    where = f"; GET {MODELS_PATH} lists {_listing(shown)}" if shown is not None else ""
    if listed is None and listed_note:
        where = f"; GET {MODELS_PATH}: {listed_note}"
    verdict: ServedModelVerdict
    if names:
        verdict = "differs" if others else "same"
        detail = f"the answers name {_listing(names)}{where}"
    elif listed:
        verdict = "same" if any(same_model(asked, name, cwd) for name in listed) else "differs"
        detail = f"the answers name no model{where}"
    else:
        verdict, detail = "unnamed", f"the answers name no model{where or f'; GET {MODELS_PATH} was not asked'}"
    return ServedModel(
        asked=asked, answered=names, listed=shown, listed_note=listed_note, verdict=verdict, detail=detail
    )


def _listing(names: Sequence[str]) -> str:
    return ", ".join(repr(name) for name in names) if names else "no model"


def listed_models(
    url: str, *, api_key: str | None, timeout_s: float = LISTING_TIMEOUT_S
) -> tuple[list[str] | None, str | None]:
    """(the model ids GET /v1/models lists, None) or (None, why there is no list): read under LISTING_BYTES and
    `timeout_s`, never a redirect followed, never raised."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = BoundedClient(timeout_s=timeout_s, max_response_bytes=LISTING_BYTES).get(
            url.rstrip("/") + MODELS_PATH, headers=headers
        )
    except REQUEST_ERRORS as error:
        return None, f"no answer ({type(error).__name__}: {str(error)[:200]})"
    if response.status_code != 200:
        return None, f"HTTP {response.status_code}"
    body = parse_server_json(response.content).value  # any shape or depth, its text escaped: read, never raised
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None, "not a model list (no `data` list)"
    return [kept_name(m["id"]) for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)], None

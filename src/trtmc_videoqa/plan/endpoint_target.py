"""A server as the run names it, fixed before it runs: what an endpoint row's cache key is made from
(`plan/cache_keys.py` `endpoint_key`) and what its row states; then the server once it runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..results import ComparisonFacts, RecordedCommand
    from .self_test import DeclaredNoAnswer


@dataclass(frozen=True, kw_only=True)
class EndpointTarget:
    """A server as the run names it, fixed before it runs: what makes the row's cache key. `identity` names the
    server (its URL where the user gave one; what it is where its URL changes every run: the self-test's, a
    comparison's); `native_key` names the native Task route checked against, if any; `declared_no_answer` is the
    run plan's own declaration that this server answers "cannot tell" here (the self-test's test double on a real
    clip), so such answers pass the output check and the row says it is about transport and timing only;
    `comparison` marks an upstream server this run starts (`trtmc-videoqa compare`), never counted as TRTMC."""

    profile: str
    model: str
    identity: str
    stated: dict[str, str] = field(default_factory=dict)
    native_key: str | None = None
    declared_no_answer: DeclaredNoAnswer | None = None
    reference_self_test: bool = False
    comparison: ComparisonFacts | None = None


def _always_alive() -> bool:
    return True  # a server the user runs: never watched


@dataclass(frozen=True, kw_only=True)
class LiveEndpoint:
    """The server once it runs: its URL, per-request records, whether it still runs, its native Task route (if
    any) and how this run started it (None: the user did)."""

    url: str
    records: Path | None = None
    alive: Callable[[], bool] = _always_alive
    native_url: str | None = None
    serve_command: RecordedCommand | None = None

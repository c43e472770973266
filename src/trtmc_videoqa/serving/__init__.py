"""Start and stop a server process on loopback, wait for readiness, and the capability check.

The process supervisor (`process.py`) brings httpx, its readiness client: its names load on first use (PEP 562,
`common/lazy.py`), so a run that starts no server of its own (an endpoint run) never loads that client."""

from typing import TYPE_CHECKING

from ..common.lazy import lazy_getattr

if TYPE_CHECKING:
    from .process import ServerProblem, ServerProcess, free_loopback_port

_LAZY = {"ServerProblem": "process", "ServerProcess": "process", "free_loopback_port": "process"}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = ["ServerProblem", "ServerProcess", "free_loopback_port"]

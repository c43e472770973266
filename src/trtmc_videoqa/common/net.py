"""Whether a host name is loopback (servers we start bind there unless told otherwise), and the TLS context, made
once, that the bounded client and our httpx clients verify with."""

from __future__ import annotations

import functools
import ipaddress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl


def is_loopback_host(host: str) -> bool:
    """True for localhost and every loopback address, IPv6 in brackets or not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@functools.cache
def verified_tls() -> ssl.SSLContext:
    """TLS verified against certifi's CA store (httpx's default), or the system's where certifi is missing. Made once
    per process: loading the CA store costs about 25 ms of CPU, which httpx would spend again on every client it
    builds (a readiness wait, each clip a server fetches). An SSLContext is safe to share between threads."""
    import ssl  # here: most commands never speak TLS

    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())

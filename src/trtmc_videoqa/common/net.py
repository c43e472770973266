"""Whether a host name is loopback: servers we start bind there unless told otherwise."""

from __future__ import annotations

import ipaddress


def is_loopback_host(host: str) -> bool:
    """True for localhost and every loopback address, IPv6 in brackets or not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False

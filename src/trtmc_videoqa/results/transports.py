"""The video transports' vocabulary as it stands on a row and in the settings: how a request carries its clip, and
what `--video-transport` may ask for. The table of what each transport and each choice means, with their words, is
`transports/table.py`."""

from __future__ import annotations

from typing import Literal

# How a request carries its clip: a base64 data URL in the body, or an http URL of our own loopback clip server.
VideoTransport = Literal["data-url", "http"]
# What --video-transport asks for: one of them, or auto (data-url first, then http, the first accepted kept).
TransportChoice = Literal["data-url", "http", "auto"]

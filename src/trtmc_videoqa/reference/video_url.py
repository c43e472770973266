"""A chat request's video_url, whatever carries the clip: a base64 data URL, or an http(s) URL on loopback that the
endpoint downloads (as a server that fetches video URLs does).

Only loopback hosts are fetched, without redirects (one could lead elsewhere) and under a size limit; anything else
is a 400 naming what was wrong. The `refuse_data_urls` knob answers a data URL as Hugging Face `transformers serve`
does, HTTP 500 with its message, so a run can be tried against a server that takes only URLs.
"""

from __future__ import annotations

from ..common.net import is_loopback_host, verified_tls
from ..media.sniff import sniff_mime
from ..media.source import DEFAULT_MAX_BYTES
from .clip import RequestClip, clip_from_bytes, clip_from_data_url
from .errors import RequestRejected

# transformers serve's answer to a data URL, word for word.
DATA_URL_REFUSAL = "Incorrect format used for video. Should be an url linking to an video or a local path"
FETCH_TIMEOUT_S = 30.0
_SHOWN = 80


def _shown(url: str) -> str:
    return url if len(url) <= _SHOWN else url[: _SHOWN - 3] + "..."


async def clip_from_video_url(url: str, *, refuse_data_urls: bool = False) -> RequestClip:
    """The clip a video_url part names; RequestRejected (400, or the knob's 500) when it cannot be had."""
    scheme = url.partition(":")[0].lower()
    if scheme == "data":
        if refuse_data_urls:
            raise RequestRejected(500, DATA_URL_REFUSAL, "server_error")
        return clip_from_data_url(url)
    if scheme in ("http", "https"):
        return await clip_from_http_url(url)
    # Neither: the data URL parser says what a data URL needs.
    return clip_from_data_url(url)


async def clip_from_http_url(url: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> RequestClip:
    """GET the clip from a loopback host; its MIME type from its bytes, else the response's video/* type."""
    import httpx  # only for a clip by URL: httpx costs each endpoint process about 70 ms of CPU at its start

    try:
        host = httpx.URL(url).host
    except httpx.InvalidURL as error:
        raise RequestRejected(400, f"video_url {_shown(url)!r} is not a valid URL: {error}") from None
    if not host or not is_loopback_host(host):
        raise RequestRejected(
            400,
            f"video_url host {host!r} is not loopback: the reference endpoint fetches video URLs from this machine "
            "only (127.0.0.1, ::1, localhost); send the clip there, or as a data URL",
        )
    data, declared = await _download(url, max_bytes)
    mime = sniff_mime(data) or (declared if declared.startswith("video/") else None)
    if mime is None:
        raise RequestRejected(400, f"video_url {_shown(url)!r} is not a video (Content-Type {declared!r})")
    return clip_from_bytes(data, mime)


async def _download(url: str, max_bytes: int) -> tuple[bytes, str]:
    """(bytes, declared Content-Type) of a 200 answer; anything else is a 400 saying what came back."""
    import httpx

    chunks: list[bytes] = []
    size = 0
    try:
        async with (
            httpx.AsyncClient(
                timeout=FETCH_TIMEOUT_S, trust_env=False, follow_redirects=False, verify=verified_tls()
            ) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code != 200:
                raise RequestRejected(
                    400, f"video_url {_shown(url)!r} could not be fetched: HTTP {response.status_code}"
                )
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise RequestRejected(400, f"video_url {_shown(url)!r} is over {max_bytes:,} bytes")
                chunks.append(chunk)
            declared = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    except httpx.HTTPError as error:
        raise RequestRejected(
            400, f"video_url {_shown(url)!r} could not be fetched: {type(error).__name__}: {error}"
        ) from None
    if not chunks:
        raise RequestRejected(400, f"video_url {_shown(url)!r} is empty")
    return b"".join(chunks), declared

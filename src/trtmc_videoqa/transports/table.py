"""The video transports, in one table: how a request carries its clip to a server, the values of
`--video-transport`, their words, and what each of them tries.

Everything that speaks of a transport reads it here: the types on the row (`results/transports.py`, the vocabulary
only), the option's help (`plan/settings.py`), `qualify --dry-run` (`cli/dry_run.py`), the capability check and the
order it tries them in, the chat bodies of the capability check and identity, and AIPerf's input rows (through
`transports/clips.py`), whether a run starts its loopback clip server, and which clips the body limit is checked for
before a run. `dagger_plan.py` may import only `common/` and `results/layout.py`, so it keeps its own copy of the
choices, held equal to this table by `tests/test_dagger_plan.py`. People read `docs/transports.md`.

To add a transport: its `Literal` value in `results/transports.py`, its row in TRANSPORTS (and a choice in CHOICES,
or a place in `auto`'s tries), then what carries it in `transports/clips.py` (`chat_video_url`, `aiperf_videos`)
where neither a data URL nor a clip server URL will do.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..results.transports import TransportChoice, VideoTransport


@dataclass(frozen=True)
class Transport:
    """One way a request carries its clip, the same in every request of a row once its capability check chose it."""

    by_url: bool  # the clip's URL on the run's loopback clip server (else its bytes, as a base64 data URL)
    under_body_limit: bool  # the clip's bytes are in the body, which must fit --body-limit
    chat: str  # what the video part of our own chat bodies carries (the capability check, identity's chat side)
    aiperf: str  # what AIPerf's input row names as the video, and what AIPerf then sends
    instead: VideoTransport  # the one a failure of this one points to, when the server could not take the clip so


TRANSPORTS: dict[VideoTransport, Transport] = {
    "data-url": Transport(
        by_url=False,
        under_body_limit=True,
        chat="the clip's bytes as a base64 data URL",
        aiperf="the clip's path, which AIPerf encodes as a base64 data URL",
        instead="http",
    ),
    "http": Transport(
        by_url=True,
        under_body_limit=False,
        chat="the clip's URL on the run's loopback clip server",
        aiperf="the clip's URL on the run's loopback clip server, which AIPerf passes through unchanged",
        instead="data-url",
    ),
}
# What a stage sends when the row has no transport of its capability check's choosing (the check did not run).
FALLBACK_TRANSPORT: VideoTransport = "data-url"


@dataclass(frozen=True)
class Choice:
    """One value of --video-transport."""

    help: str  # its words in --help, after the value
    dry_run: str  # its words in `qualify --dry-run`'s plan
    tries: tuple[VideoTransport, ...]  # what the capability check tries, in order; the first accepted is the row's


# In the order --help lists them; the default first.
CHOICES: dict[TransportChoice, Choice] = {
    "data-url": Choice(
        help="base64 in the body, under --body-limit",
        dry_run="each clip as a base64 data URL in the body",
        tries=("data-url",),
    ),
    "http": Choice(
        help="an http://127.0.0.1 URL of a clip server this run starts; no body limit",
        dry_run="each clip as an http URL of a loopback clip server this run starts",
        tries=("http",),
    ),
    "auto": Choice(
        help="data-url first, then http if the capability check is refused; the first accepted is kept for the row",
        dry_run="data-url first, http if the server refuses it (the first accepted kept for the row)",
        tries=("data-url", "http"),
    ),
}
DEFAULT_CHOICE: TransportChoice = "data-url"


def used_transport(accepted: VideoTransport | None) -> VideoTransport:
    """The transport a stage sends the row's clips by: the one its capability check accepted, else the fallback."""
    return accepted if accepted is not None else FALLBACK_TRANSPORT


def needs_clip_server(choice: TransportChoice) -> bool:
    """Whether a run with this choice starts its loopback clip server: one of its tries carries a clip by URL."""
    return any(TRANSPORTS[transport].by_url for transport in CHOICES[choice].tries)


def body_limit_checked(choice: TransportChoice) -> bool:
    """Whether a clip's body is checked against --body-limit before a run: one of the tries carries its bytes."""
    return any(TRANSPORTS[transport].under_body_limit for transport in CHOICES[choice].tries)


def over_body_limit_refused(choice: TransportChoice) -> bool:
    """Whether a clip over --body-limit refuses the run (every try carries its bytes), rather than being a note on the
    plan (its over-limit tries not sent, another tried)."""
    return all(TRANSPORTS[transport].under_body_limit for transport in CHOICES[choice].tries)

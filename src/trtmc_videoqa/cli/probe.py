"""`trtmc-videoqa probe`: a clip's manifest as JSON, the frames a sampling policy picks, and their strip."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..common.errors import EXIT_OK, BadInput
from ..common.sizes import size_argument


def cmd_probe(args: argparse.Namespace) -> int:
    from ..media import SamplingPolicy, probe_clip, write_strip

    limit = {"max_bytes": args.max_bytes} if args.max_bytes else {}
    manifest = probe_clip(args.clip, decode_all=args.decode_all, **limit)
    try:
        policy = SamplingPolicy.parse(args.policy)
    except ValueError as error:
        raise BadInput(f"--policy {args.policy!r}: {error}") from None
    resolved = policy.resolve(manifest.frames_counted, manifest.fps, manifest.start_time_s)
    output: dict[str, object] = {"manifest": manifest.model_dump(), "sampling": resolved.model_dump(mode="json")}
    if args.strip:
        size = (manifest.width, manifest.height)  # the user's own path: its folder must exist already
        output["strip"] = str(write_strip(args.clip, resolved, args.strip, frame_size=size, make_parents=False))
    print(json.dumps(output, indent=2))
    return EXIT_OK


def add_arguments(probe: argparse.ArgumentParser) -> None:
    """The `probe` command's options; its handler."""
    probe.description = (
        "Probe a clip with PyAV and print its manifest as JSON, with the frames a sampling policy "
        "picks; --strip writes those frames side by side as a PNG."
    )
    probe.add_argument("clip", type=Path, metavar="CLIP", help="the clip file (mp4, webm, mkv, avi, mpg, gif)")
    probe.add_argument("--decode-all", action="store_true", help="count frames by decoding every one")
    probe.add_argument(
        "--max-bytes",
        type=size_argument,
        metavar="SIZE",
        help="refuse a larger file (default 64 MiB; a size: 512MiB, 4GiB or bytes)",
    )
    probe.add_argument(
        "--policy",
        default="uniform:8",
        help="sampling policy: uniform:N or fps:F[,min=..,max=..,even] (default uniform:8)",
    )
    probe.add_argument("--strip", type=Path, metavar="FILE.png", help="write the picked frames as one PNG strip")
    probe.set_defaults(handler=cmd_probe)

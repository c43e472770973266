"""probe_clip on a 5 s 1280x720 25 fps H.264 clip. Goal: under 150 ms (median).

    .venv/bin/python bench/bench_probe.py [--runs 15] [--cache /tmp/trtmc-videoqa-bench] [--quick]

The clips are made once with PyAV (libx264 defaults: crf 23, keyint 250; no audio) and cached. The content is
moving gradients, drifting noise and boxes: about 3 Mbit/s, and x264 codes every frame as a P-frame in one
GOP, the worst case for a probe that decodes everything from the last keyframe on; this one decodes the first
frame and, for H.264, only the last 8 packets (their references concealed, see media/probe.py). For comparison the
same frames with a keyframe every 2 s (a common streaming setting) are timed too, and so is decode_all (every
frame decoded); before the last line it prints what decoding the whole last GOP would cost on the cores here.
The last line is the default clip. --quick (for CI: about 1 s with the clip cached, plus about 5 s to make it):
only the default clip, the median of 3 probes, without the comparisons.
"""

from __future__ import annotations

import argparse
import statistics
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from trtmc_videoqa.media import probe_clip

GOAL_MS = 150.0
WIDTH, HEIGHT, FPS, SECONDS = 1280, 720, 25, 5


def make_clip(path: Path, *, keyframe_interval: int | None = None) -> Path:
    """Write a benchmark clip (about 5 s of encoding on 2 cores)."""
    rows, columns = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float32)
    frames = FPS * SECONDS
    # the noise drifts steadily (never wraps), so the encoder sees no artificial scene cut
    noise = np.random.default_rng(0).integers(0, 24, (HEIGHT + frames, WIDTH + 2 * frames), dtype=np.uint8)
    partial = path.with_suffix(".partial.mp4")
    with av.open(str(partial), "w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        if keyframe_interval is not None:
            stream.options = {"g": str(keyframe_interval)}
        for index in range(frames):
            pixels = np.empty((HEIGHT, WIDTH, 3), np.uint8)
            pixels[..., 0] = 128 + 100 * np.sin((columns + 6 * index) / 90)
            pixels[..., 1] = 128 + 100 * np.sin((rows - 3 * index) / 70)
            pixels[..., 2] = 128 + 90 * np.sin((columns + rows + 5 * index) / 130)
            pixels += noise[index : index + HEIGHT, 2 * index : 2 * index + WIDTH, None]
            for box in range(6):
                x = (40 + index * (4 + box * 2) + box * 150) % (WIDTH - 120)
                y = 60 + box * 100
                pixels[y : y + 90, x : x + 110] = ((box * 40) % 256, 255 - box * 30, (box * 70) % 256)
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, FPS)
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    partial.replace(path)
    return path


def keyframes(path: Path) -> list[int]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        packets = sorted((packet for packet in container.demux(stream) if packet.size), key=lambda p: p.pts)
        return [position for position, packet in enumerate(packets) if packet.is_keyframe]


def median_ms(path: Path, runs: int, **options: bool) -> float:
    probe_clip(path, **options)  # warm: imports, page cache
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        probe_clip(path, **options)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def last_frame_floor(path: Path, runs: int = 3) -> tuple[int, str, float, int]:
    """What a probe that decodes the last frame together with every frame it references would do: decode every
    frame from the last keyframe on (each P-frame is a reference of the next); the probe before H.264's `showall`
    tail did that. Returns (frames, their types, single-thread CPU ms, usable cores): CPU ms / cores is the least
    wall time such a probe could take here, whatever threading it used."""
    import collections
    import io
    import os

    data = path.read_bytes()
    cpu = []
    types: collections.Counter[str] = collections.Counter()
    frames = 0
    for run in range(runs):
        with av.open(io.BytesIO(data)) as container:
            stream = container.streams.video[0]
            decoder = stream.codec_context
            decoder.thread_type, decoder.thread_count = "SLICE", 1
            decoder.options = {"skip_loop_filter": "all"}  # as the probe does
            packets = [packet for packet in container.demux(stream) if packet.size]
            last_key = max(i for i, packet in enumerate(packets) if packet.is_keyframe)
            started = time.process_time()
            decoded = [frame for packet in [*packets[last_key:], None] for frame in decoder.decode(packet)]
            cpu.append((time.process_time() - started) * 1000)
        if run == 0:
            frames = len(decoded)
            kinds = {1: "I", 2: "P", 3: "B"}  # AVPictureType
            types.update(kinds.get(int(frame.pict_type), str(frame.pict_type)) + "-frames" for frame in decoded)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return frames, ", ".join(f"{count} {kind}" for kind, count in sorted(types.items())), min(cpu), cores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/trtmc-videoqa-bench"))
    parser.add_argument("--quick", action="store_true", help="the default clip only, 3 probes (CI)")
    arguments = parser.parse_args()
    arguments.cache.mkdir(parents=True, exist_ok=True)
    clip = cached_clip(arguments.cache / f"probe-5s-720p-h264-av{av.__version__}.mp4", None)
    if arguments.quick:
        probe = median_ms(clip, 3)
        print(
            f"probe 5s 720p: {probe:.1f} ms (goal < {GOAL_MS:.0f} ms) ratio {probe / GOAL_MS:.2f} (--quick: 3 probes)"
        )
        return
    short_gops = cached_clip(arguments.cache / f"probe-5s-720p-h264-g50-av{av.__version__}.mp4", 50)
    for path in (clip, short_gops):
        manifest = probe_clip(path)
        print(
            f"clip {path.name}: {manifest.bytes:,} bytes, {manifest.width}x{manifest.height}, {manifest.fps} fps, "
            f"{manifest.frames_counted} frames, keyframes at {keyframes(path)}"
        )
    everything = median_ms(clip, max(3, arguments.runs // 3), decode_all=True)
    print(f"probe decode_all (every frame decoded): {everything:.1f} ms")
    print(f"probe, keyframe every 2 s: {median_ms(short_gops, arguments.runs):.1f} ms")
    frames, types, cpu_ms, cores = last_frame_floor(clip)
    print(
        f"the last frame depends on {frames} frames ({types}); decoding all of them costs {cpu_ms:.0f} ms of CPU "
        f"on one thread, at least {cpu_ms / cores:.0f} ms on {cores} core(s); the probe decodes the last "
        "packets alone (H.264 showall) instead"
    )
    probe = median_ms(clip, arguments.runs)
    print(f"probe 5s 720p: {probe:.1f} ms (goal < {GOAL_MS:.0f} ms) ratio {probe / GOAL_MS:.2f}")


def cached_clip(path: Path, keyframe_interval: int | None) -> Path:
    if not path.exists():
        started = time.perf_counter()
        make_clip(path, keyframe_interval=keyframe_interval)
        print(f"made {path} in {time.perf_counter() - started:.1f} s")
    return path


if __name__ == "__main__":
    main()

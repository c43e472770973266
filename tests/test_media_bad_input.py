"""Every bad clip is a ClipError whose message names the file, the problem and the fix, and no other
exception type escapes for bad input."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from media_clips import Clips

from trtmc_videoqa.media import (
    ClipError,
    decode_frames,
    decoded_rgb_sha256,
    probe_clip,
    read_clip_bytes,
    video_data_url,
)

REEXPORT = "re-export or re-download it"


def cut(source: Path, target: Path, keep: int) -> Path:
    target.write_bytes(source.read_bytes()[:keep])
    return target


def corrupt_first_sample(mp4: Path, target: Path) -> Path:
    """Overwrite the first H.264 NAL unit's length prefix, just inside the mdat box."""
    data = bytearray(mp4.read_bytes())
    payload = data.index(b"mdat") + 4
    data[payload : payload + 4] = b"\xff\xff\xff\xff"
    target.write_bytes(bytes(data))
    return target


def rename_codec(mkv: Path, target: Path) -> Path:
    """The same Matroska file with its CodecID replaced by one FFmpeg does not know (same length)."""
    data = mkv.read_bytes()
    assert data.count(b"V_MPEG4/ISO/AVC") == 1
    target.write_bytes(data.replace(b"V_MPEG4/ISO/AVC", b"V_NOTHING/KNOWN"))
    return target


def moov_offset(mp4: Path) -> int:
    return mp4.read_bytes().index(b"moov") - 4


def bad_inputs(clips: Clips, tmp: Path) -> dict[str, tuple[Path, str]]:
    """case -> (file, the sentence its message must contain)."""
    mp4_size = clips.mp4.stat().st_size
    return {
        "missing": (tmp / "nowhere.mp4", "does not exist; check the path"),
        "directory": (tmp, "is a directory, not a file; pass the path of a video file"),
        "empty": (clips.empty, f"is empty (0 bytes); {REEXPORT}"),
        "first half of an mp4": (
            cut(clips.mp4, tmp / "half.mp4", mp4_size // 2),
            "is truncated: its mdat box (the media data) at byte 40 declares",
        ),
        "mp4 whose moov is cut": (
            cut(clips.mp4, tmp / "moov-cut.mp4", mp4_size - 100),
            "is truncated: its moov box (the index) at byte",
        ),
        "mp4 without its moov": (
            cut(clips.mp4, tmp / "no-moov.mp4", moov_offset(clips.mp4)),
            "has no moov box (the index a player needs): it was cut short or never finalised",
        ),
        "faststart mp4 cut in its media data": (
            cut(clips.mp4_faststart, tmp / "faststart-cut.mp4", clips.mp4_faststart.stat().st_size - 300),
            "is truncated: its mdat box (the media data)",
        ),
        "half a webm": (
            cut(clips.webm, tmp / "half.webm", clips.webm.stat().st_size // 2),
            "is truncated: its Matroska segment declares",
        ),
        "half an avi": (
            cut(clips.avi, tmp / "half.avi", clips.avi.stat().st_size // 2),
            "is truncated: its RIFF header declares",
        ),
        "half a gif": (
            cut(clips.gif, tmp / "half.gif", clips.gif.stat().st_size // 2),
            "is truncated: the GIF trailer byte (0x3B) that ends every GIF is missing",
        ),
        # MPEG-PS has no total size, but every packet states its length (a cut exactly between two packs is
        # indistinguishable from a shorter clip, so cut inside one)
        "half an mpg": (
            cut(clips.mpg, tmp / "half.mpg", clips.mpg.stat().st_size // 2 + 100),
            "is truncated: its MPEG packet at byte",
        ),
        "mp4 whose first frame is corrupt": (
            corrupt_first_sample(clips.mp4, tmp / "corrupt.mp4"),
            f"is corrupt or truncated: FFmpeg fails while reading its frames (Invalid data found when processing "
            f"input); {REEXPORT}",
        ),
        "mkv with an unknown codec": (
            rename_codec(clips.mkv, tmp / "unknown-codec.mkv"),
            "has a video stream with no decoder in this FFmpeg build (unknown or damaged codec)",
        ),
        "text renamed .mp4": (clips.text_as_mp4, "is not a video file FFmpeg can read"),
        "png image": (clips.png, "is a still image (png_pipe), not a video; pass a video clip"),
        "audio only": (clips.audio_only, "has no video stream (it holds audio only: aac)"),
    }


@pytest.fixture(scope="module")
def cases(clips: Clips, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    return bad_inputs(clips, tmp_path_factory.mktemp("bad-clips"))


CASE_NAMES = [
    "missing",
    "directory",
    "empty",
    "first half of an mp4",
    "mp4 whose moov is cut",
    "mp4 without its moov",
    "faststart mp4 cut in its media data",
    "half a webm",
    "half an avi",
    "half a gif",
    "half an mpg",
    "mp4 whose first frame is corrupt",
    "mkv with an unknown codec",
    "text renamed .mp4",
    "png image",
    "audio only",
]


@pytest.mark.parametrize("case", CASE_NAMES)
def test_bad_input_is_a_clip_error_naming_file_and_fix(case: str, cases: dict[str, tuple[Path, str]]) -> None:
    path, sentence = cases[case]
    with pytest.raises(ClipError) as caught:
        probe_clip(path)
    message = str(caught.value)
    assert message.startswith(f"clip {path} ")
    assert sentence in message
    assert caught.value.clip == str(path) and caught.value.fix and message.endswith(caught.value.fix)


def test_each_bad_input_has_its_own_message(cases: dict[str, tuple[Path, str]]) -> None:
    problems = {}
    for case in CASE_NAMES:
        with pytest.raises(ClipError) as caught:
            probe_clip(cases[case][0])
        problems[case] = re.sub(r"\d[\d,]*", "N", caught.value.problem)  # byte counts aside
    assert set(cases) == set(CASE_NAMES)
    assert len(set(problems.values())) == len(CASE_NAMES), problems


def test_clip_over_the_size_limit(clips: Clips) -> None:
    size = clips.mp4.stat().st_size
    with pytest.raises(ClipError, match=rf"is {size:,} bytes, over the 1,000-byte limit; use a shorter or smaller"):
        probe_clip(clips.mp4, max_bytes=1000)
    assert probe_clip(clips.mp4, max_bytes=size).bytes == size  # the limit itself is allowed


def test_default_size_limit_is_64_mib(clips: Clips, tmp_path: Path) -> None:
    big = tmp_path / "big.mp4"
    with big.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024 + 1)  # sparse: nothing is written
    with pytest.raises(ClipError, match="over the 67,108,864-byte limit"):
        probe_clip(big)


@pytest.mark.parametrize("reader", [decode_frames, decoded_rgb_sha256, video_data_url, read_clip_bytes])
def test_other_readers_refuse_bad_clips_the_same_way(reader: object, cases: dict[str, tuple[Path, str]]) -> None:
    for case in ("missing", "empty", "text renamed .mp4", "first half of an mp4", "audio only"):
        path, sentence = cases[case]
        if reader in (video_data_url, read_clip_bytes) and case not in ("missing", "empty"):
            continue  # they read bytes only; they do not demux
        with pytest.raises(ClipError, match=sentence.split(";")[0].replace("(", r"\(").replace(")", r"\)")):
            if reader is decode_frames:
                decode_frames(path, [0])
            else:
                reader(path)  # type: ignore[operator]


def test_bytes_input_is_checked_too(clips: Clips) -> None:
    with pytest.raises(ClipError, match=r"clip <bytes> is empty"):
        decode_frames(b"", [0])
    with pytest.raises(ClipError, match=r"clip <bytes> is truncated: its mdat box"):
        decode_frames(clips.mp4.read_bytes()[:1000], [0])


def test_damaged_bytes_never_escape_as_another_exception(clips: Clips, tmp_path: Path) -> None:
    """Flip bytes all over real clips: each probe either succeeds or raises ClipError."""
    rng = random.Random(7)
    outcomes = {"ok": 0, "refused": 0}
    for source in (clips.mp4, clips.webm, clips.mkv, clips.avi, clips.mpg, clips.gif):
        original = source.read_bytes()
        for trial in range(6):
            damaged = bytearray(original)
            for _ in range(1 + trial * 4):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            target = tmp_path / f"damaged-{trial}{source.suffix}"
            target.write_bytes(bytes(damaged))
            try:
                probe_clip(target)
                outcomes["ok"] += 1
            except ClipError:
                outcomes["refused"] += 1
    assert outcomes["ok"] + outcomes["refused"] == 36
    assert outcomes["refused"] > 0


def test_index_out_of_range_is_a_value_error_naming_the_count(clips: Clips) -> None:
    with pytest.raises(ValueError, match=r"frame index 48 is out of range: clip .*square.mp4 has 48 frames"):
        decode_frames(clips.mp4, [0, 48])
    with pytest.raises(ValueError, match="non-negative integers"):
        decode_frames(clips.mp4, [-1])

"""Decoded frames come back in the asked order with the right content, and the strip shows exactly them."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from media_clips import HEIGHT, WIDTH, Clips, measured_square_x, square_x
from PIL import Image

from trtmc_videoqa.media import SamplingPolicy, decode_frames, probe_clip, write_strip
from trtmc_videoqa.media.frames import decode_images, decode_timed_frames, decoded_rgb_sha256


@pytest.mark.parametrize("name", ["mp4", "webm", "mkv", "avi", "mpg", "gif"])
def test_decoded_frames_are_rgb_in_the_asked_order(name: str, clips: Clips) -> None:
    indices = [47, 0, 20, 20, 7]
    frames = decode_frames(getattr(clips, name), indices)
    assert len(frames) == len(indices)
    for index, pixels in zip(indices, frames, strict=True):
        assert pixels.shape == (HEIGHT, WIDTH, 3) and pixels.dtype == np.uint8
        assert abs(measured_square_x(pixels) - square_x(index)) <= 1, (name, index)


@pytest.mark.parametrize("name", ["mp4", "webm", "mkv", "avi", "mpg", "gif"])
def test_images_hold_the_decoded_frames_pixels(name: str, clips: Clips) -> None:
    """The strip's frames come as Pillow images, without NumPy: the very pixels decode_frames gives, which are PyAV's
    own conversion of each frame (one reformatter serves the whole decode, where PyAV makes one per frame)."""
    import av

    with av.open(str(getattr(clips, name))) as container:
        own = [frame.to_ndarray(format="rgb24").tobytes() for frame in container.decode(video=0)]
    indices = [47, 0, 20]
    images = decode_images(getattr(clips, name), indices)
    arrays = decode_frames(getattr(clips, name), indices)
    for index, image, pixels in zip(indices, images, arrays, strict=True):
        assert image.mode == "RGB" and image.size == (WIDTH, HEIGHT) and image.tobytes() == pixels.tobytes()
        assert pixels.tobytes() == own[index]
    timed = decode_timed_frames(getattr(clips, name))
    assert [frame.rgb.tobytes() for frame in timed.frames] == own
    assert decoded_rgb_sha256(getattr(clips, name)) == hashlib.sha256(b"".join(own)).hexdigest()
    with pytest.raises(ValueError, match="non-negative integers"):
        decode_images(clips.mp4, [np.int64(1), True])
    assert decode_images(clips.mp4, [np.int64(1)])[0].tobytes() == decode_frames(clips.mp4, [1])[0].tobytes()


def test_a_clip_probed_sampled_and_stripped_loads_no_numpy(clips: Clips, tmp_path: Path) -> None:
    """What a workload's preparation does with each clip (probe, the policy resolved, the strip) leaves NumPy
    unloaded: importing it is a tenth of a second of every run's start."""
    script = (
        "import sys\n"
        "from trtmc_videoqa.media import SamplingPolicy, probe_clip, write_strip\n"
        f"manifest = probe_clip({str(clips.mp4)!r})\n"
        "resolved = SamplingPolicy.parse('uniform:8').resolve(manifest.frames_counted, manifest.fps)\n"
        f"write_strip({str(clips.mp4)!r}, resolved, {str(tmp_path / 'frames.png')!r})\n"
        "assert 'numpy' not in sys.modules, 'numpy was loaded'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "frames.png").is_file()


def test_square_moves_left_to_right_over_the_uniform_8_frames(clips: Clips) -> None:
    resolved = SamplingPolicy.parse("uniform:8").resolve(48, 24)
    positions = [measured_square_x(pixels) for pixels in decode_frames(clips.mp4, resolved.indices)]
    assert positions == sorted(positions) and len(set(positions)) == 8


def test_bytes_and_path_decode_the_same(clips: Clips) -> None:
    from_path = decode_frames(clips.mp4, [3, 30])
    from_bytes = decode_frames(clips.mp4.read_bytes(), [3, 30])
    assert all(np.array_equal(a, b) for a, b in zip(from_path, from_bytes, strict=True))
    assert decode_frames(clips.mp4, []) == []


@pytest.mark.parametrize("spec", ["uniform:8", "fps:2,min=4,max=768,even", "uniform:3,floor"])
def test_strip_shows_the_picked_frames_side_by_side(spec: str, clips: Clips, tmp_path: Path) -> None:
    manifest = probe_clip(clips.mp4)
    resolved = SamplingPolicy.parse(spec).resolve(manifest.frames_counted, manifest.fps, manifest.start_time_s)
    out = write_strip(clips.mp4, resolved, tmp_path / "strips" / "frames.png")
    assert out == tmp_path / "strips" / "frames.png" and out.is_file()
    assert sorted(p.name for p in out.parent.iterdir()) == ["frames.png"]  # no temporary file left behind
    with Image.open(out) as image:
        assert image.format == "PNG"
        assert image.width == len(resolved.indices) * WIDTH
        assert image.height > HEIGHT  # a label band below the frames
        strip = np.asarray(image.convert("RGB"))
    frames = decode_frames(clips.mp4, resolved.indices)
    for slot, pixels in enumerate(frames):
        assert np.array_equal(strip[:HEIGHT, slot * WIDTH : (slot + 1) * WIDTH], pixels)
        band = strip[HEIGHT:, slot * WIDTH : (slot + 1) * WIDTH]
        assert band.max() > 120 and band.min() < 30  # light (anti-aliased) label text on the dark band


def test_strip_refuses_an_empty_pick(clips: Clips, tmp_path: Path) -> None:
    resolved = SamplingPolicy.parse("uniform:8").resolve(48, 24).model_copy(update={"indices": [], "timestamps_s": []})
    with pytest.raises(ValueError, match="picks no frames"):
        write_strip(clips.mp4, resolved, tmp_path / "empty.png")
    assert not (tmp_path / "empty.png").exists()

"""The silent-audio copy of a clip: the same video packets byte for byte, a silent AAC track beside them."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from trtmc_videoqa.media import ClipError
from trtmc_videoqa.media.probe import probe_clip
from trtmc_videoqa.media.silent_audio import with_silent_audio

BBB = Path(__file__).resolve().parents[1] / "src" / "trtmc_videoqa" / "workloads" / "data" / "bigbuckbunny"


def _video_packets(path: Path) -> list[bytes]:
    with av.open(str(path)) as container:
        return [bytes(p) for p in container.demux(container.streams.video[0]) if p.dts is not None]


def test_the_copy_keeps_every_video_packet_and_adds_silence(tmp_path: Path) -> None:
    clip = sorted(BBB.glob("*.mp4"))[0]
    copy = with_silent_audio(clip, tmp_path / "with-audio.mp4")
    assert probe_clip(clip).audio is None and probe_clip(copy).audio == "aac"
    assert _video_packets(copy) == _video_packets(clip)  # no re-encoding: the model sees the same frames
    assert probe_clip(copy).frames_counted == probe_clip(clip).frames_counted
    with av.open(str(copy)) as container:
        samples = np.concatenate([f.to_ndarray().ravel() for f in container.decode(audio=0)])
    assert samples.size > 0 and float(np.abs(samples).max()) < 1e-3  # silent
    duration = probe_clip(clip).duration_s
    assert samples.size / 16_000 >= duration - 0.1


def test_a_file_that_is_no_video_is_refused_by_name(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.mp4"
    bogus.write_text("not a video")
    with pytest.raises(ClipError, match="notes.mp4"):
        with_silent_audio(bogus, tmp_path / "out.mp4")

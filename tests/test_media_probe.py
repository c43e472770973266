"""probe_clip on every container the tool must read, against what the synthetic clips are known to hold."""

from __future__ import annotations

import hashlib
import re

import av
import pytest
from media_clips import FRAMES, HEIGHT, WIDTH, Clips

from trtmc_videoqa.media import (
    COUNT_BY_DECODING,
    COUNT_BY_PACKETS,
    ClipManifest,
    decoded_rgb_sha256,
    probe_clip,
)

# container -> (demuxer, decoder, canonical codec, profile, pix_fmt, frames declared, fps, bit-rate source,
#               first pts, last pts)
EXPECTED = {
    "mp4": ("mov,mp4,m4a,3gp,3g2,mj2", "h264", "h264", "High", "yuv420p", 48, "24/1", "stream", 0.0, 1.958333),
    "webm": ("matroska,webm", "vp9", "vp9", "Profile 0", "yuv420p", 0, "24/1", "derived: size*8/duration", 0.0, 1.958),
    "mkv": ("matroska,webm", "h264", "h264", "High", "yuv420p", 0, "24/1", "derived: size*8/duration", 0.0, 1.958),
    "avi": (
        "avi",
        "mpeg4",
        "mpeg4",
        "Simple Profile",
        "yuv420p",
        48,
        "24/1",
        "derived: size*8/duration",
        0.0,
        1.958333,
    ),
    # MPEG-PS: the muxer starts the clock at 0.54 s (real MPEG-PS files, e.g. cityCC0.mpg, start late too),
    # declares no frame count, and for this clip stamps frame 35 as 36, so the last of the 48 frames sits at 2.0 s
    # after the first
    "mpg": (
        "mpeg",
        "mpeg2video",
        "mpeg2video",
        "Main",
        "yuv420p",
        0,
        "24/1",
        "derived: size*8/duration",
        0.541667,
        2.541667,
    ),
    # GIF delays are in 1/100 s; average_rate reads 25 although the frames are 1/24 s apart on average, so the
    # rate the frames bear out (guessed_rate 24) is the one reported
    "gif": ("gif", "gif", "gif", None, "bgra", 48, "24/1", "derived: size*8/duration", 0.0, 1.96),
}


@pytest.fixture(scope="module")
def manifests(clips: Clips) -> dict[str, ClipManifest]:
    return {name: probe_clip(getattr(clips, name)) for name in EXPECTED}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_probe_reports_each_containers_facts(name: str, clips: Clips, manifests: dict[str, ClipManifest]) -> None:
    demuxer, decoder, codec, profile, pix_fmt, declared, fps, bit_rate_source, first, last = EXPECTED[name]
    path = getattr(clips, name)
    manifest = manifests[name]
    data = path.read_bytes()

    assert manifest.path == str(path)
    assert manifest.sha256 == hashlib.sha256(data).hexdigest()
    assert manifest.bytes == len(data)
    assert manifest.container == demuxer
    assert manifest.container_long_name
    assert (manifest.codec.decoder, manifest.codec.name, manifest.codec.profile, manifest.codec.pix_fmt) == (
        decoder,
        codec,
        profile,
        pix_fmt,
    )
    assert manifest.codec.long_name
    assert (manifest.width, manifest.height) == (WIDTH, HEIGHT)
    assert manifest.fps == fps
    assert manifest.fps_source == ("guessed_rate" if name == "gif" else "average_rate")
    assert manifest.fps_float == pytest.approx(int(fps.split("/")[0]))
    assert manifest.frames_declared == declared
    assert manifest.frames_counted == FRAMES
    assert manifest.frame_count_method == COUNT_BY_PACKETS == "packets, first and last frame decoded"
    assert manifest.frames_mismatch is False and manifest.frames_mismatch_message is None
    assert manifest.first_pts_s == pytest.approx(first, abs=1e-6)
    assert manifest.last_pts_s == pytest.approx(last, abs=1e-6)
    assert manifest.start_time_s == pytest.approx(first, abs=1e-6)
    # what the timestamps cover, whatever the header says: 48 frames at 24 fps (one more frame for the gap in mpg)
    assert manifest.frames_span_s == pytest.approx(last - first + 1 / 24, abs=0.002)
    assert manifest.duration_source == "container" and manifest.duration_s > 0
    assert manifest.bit_rate_source == bit_rate_source and manifest.bit_rate > 0
    if bit_rate_source.startswith("derived"):
        assert manifest.bit_rate == round(len(data) * 8 / manifest.duration_s)
    assert manifest.audio is None
    assert manifest.decoded_rgb_sha256 is None  # only when asked for


def test_container_durations_for_whole_file_formats(manifests: dict[str, ClipManifest]) -> None:
    # mp4, webm, mkv, avi and GIF state 2.0 s; MPEG-PS's is FFmpeg's estimate from timestamps, and it is short
    assert {name: m.duration_s for name, m in manifests.items() if name != "mpg"} == dict.fromkeys(
        ["mp4", "webm", "mkv", "avi", "gif"], 2.0
    )
    assert manifests["mpg"].duration_s < manifests["mpg"].frames_span_s


def test_probe_tool_names_av_and_ffmpeg(manifests: dict[str, ClipManifest]) -> None:
    tool = manifests["mp4"].probe_tool
    assert tool.av == av.__version__
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", tool.ffmpeg)
    assert set(tool.libraries) >= {"libavcodec", "libavformat", "libavutil"}
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", version) for version in tool.libraries.values())


def test_audio_track_is_recorded(clips: Clips) -> None:
    manifest = probe_clip(clips.mp4_audio)
    assert manifest.audio == "aac"
    assert manifest.frames_counted == FRAMES


def test_duration_falls_back_to_the_frames_when_no_header_states_it(clips: Clips) -> None:
    # a raw MPEG-4 elementary stream carries no duration in the container or the stream
    with av.open(str(clips.m4v)) as container:
        assert container.duration is None and container.streams.video[0].duration is None
    manifest = probe_clip(clips.m4v)
    assert manifest.duration_source == "last pts + frame duration"
    assert manifest.frames_counted == FRAMES
    # the packets are 1/24 s apart and the last one lasts 1/24 s; the raw demuxer's average rate says 25, which
    # the packets do not bear out, so the next rate that they do (24) is the one reported
    assert manifest.duration_s == manifest.frames_span_s == 2.0
    assert (manifest.fps, manifest.fps_source) == ("24/1", "guessed_rate")


def test_declared_count_that_disagrees_with_the_content_is_flagged(clips: Clips) -> None:
    manifest = probe_clip(clips.avi_overstated)
    assert (manifest.frames_declared, manifest.frames_counted) == (60, FRAMES)
    assert manifest.frames_mismatch is True
    assert manifest.frames_mismatch_message == (
        "the container declares 60 frames but 48 were counted (packets, first and last frame decoded); "
        "its index disagrees with its content: re-export the clip"
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_decode_all_counts_decoded_frames_and_agrees_with_packets(
    name: str, clips: Clips, manifests: dict[str, ClipManifest]
) -> None:
    decoded = probe_clip(getattr(clips, name), decode_all=True)
    assert decoded.frame_count_method == COUNT_BY_DECODING == "decoded all frames"
    assert decoded.frames_counted == manifests[name].frames_counted == FRAMES
    assert (decoded.first_pts_s, decoded.last_pts_s) == (manifests[name].first_pts_s, manifests[name].last_pts_s)
    assert decoded.decoded_rgb_sha256 is None


def test_decode_all_also_flags_the_mismatch(clips: Clips) -> None:
    manifest = probe_clip(clips.avi_overstated, decode_all=True)
    assert manifest.frames_mismatch and "48 were counted (decoded all frames)" in (
        manifest.frames_mismatch_message or ""
    )


def test_pixel_hash_is_filled_only_when_asked_and_matches_the_function(clips: Clips) -> None:
    manifest = probe_clip(clips.mp4, hash_pixels=True)
    assert manifest.frame_count_method == COUNT_BY_DECODING
    assert manifest.decoded_rgb_sha256 == decoded_rgb_sha256(clips.mp4)
    assert decoded_rgb_sha256(clips.mp4) == decoded_rgb_sha256(clips.mp4.read_bytes())
    # the same pixels re-muxed into Matroska hash the same; a different codec (lossy VP9) does not
    assert decoded_rgb_sha256(clips.mkv) == manifest.decoded_rgb_sha256
    assert decoded_rgb_sha256(clips.webm) != manifest.decoded_rgb_sha256


def test_manifest_round_trips_through_json(manifests: dict[str, ClipManifest]) -> None:
    for manifest in manifests.values():
        assert ClipManifest.model_validate_json(manifest.model_dump_json()) == manifest


def test_faststart_mp4_probes_like_the_plain_one(clips: Clips, manifests: dict[str, ClipManifest]) -> None:
    manifest = probe_clip(clips.mp4_faststart)
    assert clips.mp4_faststart.read_bytes()[36:40] == b"moov"  # index before the media data
    assert manifest.frames_counted == FRAMES and manifest.duration_s == 2.0
    assert manifest.sha256 != manifests["mp4"].sha256


def test_a_long_h264_gop_checks_its_last_packets_alone_and_still_catches_a_cut_last_frame(clips: Clips) -> None:
    """The clip is one GOP of 48 frames: the last-frame check decodes only the last packets (references concealed),
    yet the last pts must come out of them, and a last packet cut short is refused as a full decode refuses it."""
    from trtmc_videoqa.media.errors import ClipError
    from trtmc_videoqa.media.probe import _TAIL_PACKETS, _check_first_and_last

    def check(mangle=None):
        with av.open(str(clips.mp4)) as container:
            stream = container.streams.video[0]
            packets = [packet for packet in container.demux(stream) if packet.size]
            assert [p.is_keyframe for p in packets].count(True) == 1  # one GOP: the shortcut applies
            if mangle is not None:
                last = packets[-1]
                cut = av.Packet(bytes(last)[: len(bytes(last)) // 3])
                cut.pts, cut.dts, cut.time_base = last.pts, last.dts, last.time_base
                packets[-1] = cut
            return _check_first_and_last(stream, packets, "clip.mp4"), len(packets)

    counted, total = check()
    assert counted.tail_from == total - _TAIL_PACKETS and counted.frames == FRAMES
    full = probe_clip(clips.mp4, decode_all=True)
    assert probe_clip(clips.mp4).last_pts_s == full.last_pts_s  # the same last frame as decoding every one
    with pytest.raises((ClipError, av.error.FFmpegError)):
        check(mangle=True)


def test_deep_b_frame_reordering_keeps_the_last_shown_frame_in_the_checked_tail(tmp_path, monkeypatch) -> None:
    """With B-frames the packet of the last frame shown is not the last packet (x264 with 16 B-frames put it 13
    packets from the end of one clip). The checked tail always starts at it: here the tail is shrunk to one packet,
    and the clip still probes to the last frame a full decode finds, instead of being called corrupt."""
    from fractions import Fraction

    import numpy as np

    from trtmc_videoqa.media import probe as probe_module

    path = tmp_path / "bframes.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=24)
        stream.width, stream.height, stream.pix_fmt = 128, 96, "yuv420p"
        stream.options = {"bf": "16"}
        for index in range(70):
            pixels = np.full((96, 128, 3), (index * 4) % 256, np.uint8)
            pixels[:, (index * 2) % 128] = 255
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, 24)
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    with av.open(str(path)) as container:
        packets = [p for p in container.demux(container.streams.video[0]) if p.size]
        assert max(range(len(packets)), key=lambda i: packets[i].pts) < len(packets) - 1  # reordered at the end
    monkeypatch.setattr(probe_module, "_TAIL_PACKETS", 1)
    probed, full = probe_clip(path), probe_clip(path, decode_all=True)
    assert (probed.frames_counted, probed.last_pts_s) == (full.frames_counted, full.last_pts_s)
    assert probed.frames_counted == 70

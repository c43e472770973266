"""The workload's own artifacts under workload/<name>/: each clip's probe manifest, the declared sampling policy
resolved on each clip, and the frame strips. Made once per workload identity; every row carries the facts made here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.digests import bounded_file_sha256, file_sha256
from ..common.errors import UserError
from ..common.safe_read import MAX_STRIP_BYTES, UnreadableInput, read_file_inside
from ..results import ClipManifest, PickedFrames, SamplingFacts
from ..results.layout import PREPARED_STAMP, SAMPLING_FILE, WORKLOAD_DIR, clip_manifest_file, frame_strip_file
from . import Workload

if TYPE_CHECKING:
    from ..media import SamplingPolicy
    from .model import Clip

MAX_STAMP_BYTES = 64 << 10  # a stamp names a few files: a few hundred bytes
# Every file a stamp may list is a clip's manifest, the sampling facts or a strip: none is larger than a strip.
MAX_PREPARED_FILE_BYTES = MAX_STRIP_BYTES

SAMPLING_NOTE = (
    "the clip is sent whole; where the server samples, these are the frames the declared "
    "policy picks, and the server's own settings are recorded beside them"
)


class WorkloadClipError(UserError, ValueError):
    """A clip of the workload cannot be used (corrupt, truncated, empty, not a video, too large, or not the one
    the workload records); the message names the clip and the fix."""


@dataclass(frozen=True)
class WorkloadFacts:
    """What the rows of one workload record about its clips: each clip's manifest and the frames picked from it."""

    directory: Path
    clips: dict[str, ClipManifest]
    sampling: SamplingFacts


def workload_dir(out: Path, workload: Workload) -> Path:
    return out / WORKLOAD_DIR / workload.name


def prepare_workload_artifacts(out: Path, workload: Workload) -> WorkloadFacts:
    """workload/<name>/: each clip's probe manifest (refusing a clip that is not what the workload says), the declared
    sampling policy resolved on each clip, and frames.png, the strip of what the model is meant to see.

    Skipped when prepared.digest.json records the same workload identity and every file still has its recorded
    sha256 (a re-run with unchanged inputs); anything else makes them again."""
    directory = workload_dir(out, workload)
    identity = _prepared_identity(workload)
    prepared = _still_prepared(directory, workload, identity)
    if prepared is not None:
        return prepared
    policy = workload.sampling_policies()[0]
    clips: dict[str, ClipManifest] = {}
    picked: dict[str, PickedFrames] = {}
    written: list[str] = []
    for index, clip in enumerate(workload.spec.clips):
        strip = frame_strip_file(clip.id, first=index == 0)
        clips[clip.id], picked[clip.id] = _prepare_clip(directory, workload, clip, policy, strip)
        written += [clip_manifest_file(clip.id), strip]
    sampling = SamplingFacts(policy=policy.spec, where=policy.where, clips=picked, note=SAMPLING_NOTE)
    write_text_atomic(directory / SAMPLING_FILE, json.dumps(sampling.model_dump(), indent=2) + "\n")
    written.append(SAMPLING_FILE)
    stamp = {"identity": identity, "files": {name: file_sha256(directory / name) for name in written}}
    write_text_atomic(directory / PREPARED_STAMP, json.dumps(stamp, indent=2, sort_keys=True) + "\n")
    return WorkloadFacts(directory=directory, clips=clips, sampling=sampling)


def _prepare_clip(
    directory: Path, workload: Workload, clip: Clip, policy: SamplingPolicy, strip: str
) -> tuple[ClipManifest, PickedFrames]:
    """One clip's manifest (<id>.json) and strip, and the frames the policy picks from it."""
    from ..media import ClipError, probe_clip, write_strip

    path = workload.clip_path(clip.id)
    try:
        manifest = probe_clip(path)
    except ClipError as error:
        raise WorkloadClipError(f"workload {workload.name!r} ({workload.file}): {error}") from None
    if manifest.sha256 != clip.sha256 or manifest.frames_counted != clip.video.frames:
        raise WorkloadClipError(
            f"clip {path} is not the one workload {workload.name!r} records (sha256 or frame count differ); "
            "restore it from the repository or seal a new workload identity"
        )
    write_model_atomic(directory / clip_manifest_file(clip.id), manifest)
    resolved = policy.resolve(manifest.frames_counted, manifest.fps, manifest.start_time_s)
    try:
        write_strip(path, resolved, directory / strip)
    except ClipError as error:
        raise WorkloadClipError(f"workload {workload.name!r} ({workload.file}): {error}") from None
    return manifest, PickedFrames(indices=resolved.indices, timestamps_s=resolved.timestamps_s, rule=resolved.rule)


def _prepared_identity(workload: Workload) -> dict[str, Any]:
    """What the workload artifacts are made from: the workload (its digest covers every clip's sha256, checked on
    load) and the tool and decoder that probed them. The same identity, the same artifacts, wherever the clips lie:
    the publish step moves their recorded paths to the published copy, and a re-run must still find them made."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        decoder = version("av")
    except PackageNotFoundError:
        decoder = None
    return {
        "workload": workload.name,
        "digest": workload.digest,
        "tool": __version__,
        "av": decoder,
    }


def restamp_prepared(directory: Path) -> None:
    """The stamp's file digests taken again, after the publish step rewrote the paths in those files (a clip's
    manifest names where it was read): the identity stays, so a re-run finds the artifacts still made. A stamp
    that is not one of ours, or lists anything but plain names of regular files under the cap, is left as it is:
    the next run makes the artifacts again (this runs while stop signals are held back, so nothing here may block).
    """
    stamp = read_stamp(directory)
    if stamp is None:
        return
    files = {name: _prepared_digest(directory, name) for name in stamp["files"]}
    if all(files.values()):
        text = json.dumps(stamp | {"files": files}, indent=2, sort_keys=True)
        write_text_atomic(directory / PREPARED_STAMP, text + "\n")


def read_stamp(directory: Path) -> dict[str, Any] | None:
    """prepared.digest.json as the tool writes it: a regular file inside the folder, under MAX_STAMP_BYTES, an
    object of an `identity` object and `files`, a map of plain file names to digests; None for anything else."""
    try:
        text = read_file_inside(directory, directory / PREPARED_STAMP, MAX_STAMP_BYTES)
        stamp = json.loads(text)
    except (UnreadableInput, ValueError, RecursionError):
        return None
    if not isinstance(stamp, dict) or set(stamp) != {"identity", "files"} or not isinstance(stamp["identity"], dict):
        return None
    files = stamp["files"]
    if not isinstance(files, dict) or not all(_plain_name(n) and isinstance(d, str) for n, d in files.items()):
        return None
    return stamp


def _plain_name(name: object) -> bool:
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name


def _prepared_digest(directory: Path, name: str) -> str | None:
    return bounded_file_sha256(directory / name, MAX_PREPARED_FILE_BYTES)


def _still_prepared(directory: Path, workload: Workload, identity: dict[str, Any]) -> WorkloadFacts | None:
    """The facts already made, when the stamp records this identity, lists exactly the files this workload makes
    and each is there, a regular file with the recorded digest; None otherwise (made again)."""
    stamp = read_stamp(directory)
    if stamp is None or stamp["identity"] != identity or set(stamp["files"]) != _prepared_names(workload):
        return None
    if not all(_prepared_digest(directory, name) == digest for name, digest in stamp["files"].items()):
        return None
    try:
        clips = {
            clip.id: ClipManifest.model_validate_json(_prepared_bytes(directory, clip_manifest_file(clip.id)))
            for clip in workload.spec.clips
        }
        sampling = SamplingFacts.model_validate_json(_prepared_bytes(directory, SAMPLING_FILE))
    except (UnreadableInput, ValueError):
        return None  # damaged or edited since it was hashed: made again
    return WorkloadFacts(directory=directory, clips=clips, sampling=sampling)


def _prepared_names(workload: Workload) -> set[str]:
    """The files prepare_workload_artifacts writes for `workload`, which its stamp lists."""
    names = {SAMPLING_FILE}
    for index, clip in enumerate(workload.spec.clips):
        names |= {clip_manifest_file(clip.id), frame_strip_file(clip.id, first=index == 0)}
    return names


def _prepared_bytes(directory: Path, name: str) -> bytes:
    return read_file_inside(directory, directory / name, MAX_PREPARED_FILE_BYTES)

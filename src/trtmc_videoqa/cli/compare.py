"""`trtmc-videoqa compare`: an upstream implementation of a checkpoint beside trtmc-server.

It starts Hugging Face `transformers serve` on the checkpoint (the hub id, fetched with the user's token from the
environment, or a local folder), on loopback, and runs the endpoint ladder against it with the same workload over
the http transport. The row is labelled "comparison (not a TRTMC capability)": upstream availability never makes a
TRTMC model, and no report counts it in the group. `trtmc-videoqa report TRTMC_DIR COMPARE_DIR` shows both.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..aiperf.command import reproducible_command
from ..common.errors import EXIT_OK, BadInput
from ..common.safe_names import safe_name
from ..common.text_escape import one_line, shown_name
from ..results import ComparisonFacts
from ..results.layout import PRIVATE_DIR
from ..serving.transformers_serve import ServeTarget, find_transformers, serve_target
from .qualify_args import add_run_arguments
from .requests import RunRequest, plain_value

if TYPE_CHECKING:
    from ..results import ResultRow
    from ..workloads import Workload
    from .run_tools import RunTools

Adaptation = Literal["silent-audio", "none"]
ADAPTATION_FOLDER = "comparison-workload"  # under --out: the workload copy the server was asked about
SERVER_LOG = "transformers-serve.log"
PROFILE_SUFFIX = ".transformers-serve"


@dataclass(frozen=True)
class ComparisonRun:
    """What one comparison serves and how: fixed before anything starts."""

    target: ServeTarget
    executable: Path
    device: str
    dtype: str
    adaptation: Adaptation
    compared_profile: str | None
    startup_timeout_s: float

    @property
    def profile(self) -> str:
        """The row's name: beside the TRTMC profile it compares with (sorted next to it), else the checkpoint's."""
        base = self.compared_profile or self.target.checkpoint.replace("/", "--")
        return base + PROFILE_SUFFIX

    def workload(self, out: Path, original: Workload) -> tuple[Workload, str]:
        """The workload the server is asked about, and the row's words for what was changed in it."""
        if self.adaptation == "none":
            return original, "none: the workload's clips and requests as they are"
        from ..workloads.silent_audio_copy import adaptation_note, frame_count, silent_audio_workload

        copy = silent_audio_workload(
            original,
            out / ADAPTATION_FOLDER / original.name,
            why="Made by trtmc-videoqa compare for transformers serve 5.19-5.24, which reads audio from every video.",
        )
        return copy, adaptation_note(original, frame_count(original))

    def facts(self, server_version: str | None, media_adaptation: str) -> ComparisonFacts:
        return ComparisonFacts(
            server="transformers serve",
            server_version=server_version,
            checkpoint=self.target.checkpoint,
            revision=self.target.revision,
            compared_profile=self.compared_profile,
            device=self.device,
            media_adaptation=media_adaptation,
        )

    def identity(self, facts: ComparisonFacts) -> str:
        """The server's part of the row's cache key: what it is, what it serves, on what, with which media."""
        parts = [facts.server, facts.server_version or "", self.target.model, self.device, self.dtype]
        return " ".join([*parts, facts.media_adaptation, self._local_digest()])

    def _local_digest(self) -> str:
        """A local checkpoint's file names and sizes, so a rebuilt folder of the same name is measured again."""
        if self.target.cwd is None:
            return ""
        folder = self.target.cwd / self.target.model
        listing = sorted(f"{p.relative_to(folder)}:{p.stat().st_size}" for p in folder.rglob("*") if p.is_file())
        return hashlib.sha256("\n".join(listing).encode()).hexdigest()[:16]


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("what to compare")
    source.add_argument("--checkpoint", metavar="ID|DIR", help="hub id (org/name) or a local checkpoint folder")
    source.add_argument("--revision", metavar="REV", help="the hub revision to serve (default: main)")
    source.add_argument(
        "--trtmc",
        type=Path,
        metavar="PATH",
        help="a TRTMC checkout: with --profile, serve that profile's checkpoint and revision",
    )
    source.add_argument(
        "--profile", metavar="NAME", help="the TRTMC profile this stands beside (the row: NAME.transformers-serve)"
    )
    source.add_argument("--device", default="cuda", help="the server's --device: cuda (default), cuda:N, cpu, auto")
    source.add_argument("--dtype", default="auto", help="the server's --dtype (default auto: the weights' own)")
    source.add_argument("--transformers", type=Path, metavar="PATH", help="the `transformers` script to run")
    source.add_argument(
        "--media-adaptation",
        choices=["silent-audio", "none"],
        default="silent-audio",
        help="silent-audio (default): a workload copy whose clips carry a silent AAC track and whose requests ask "
        "for the workload's frame count, for transformers serve 5.19-5.24, which reads audio from every video; "
        "none: for a server version without that defect",
    )
    add_run_arguments(parser.add_argument_group("the run"), defaults={"video_transport": "http"})


class CompareRequest(RunRequest):
    """`trtmc-videoqa compare`: the checkpoint to serve (a hub id or folder, or a TRTMC profile's) and how."""

    checkpoint: str | None
    revision: str | None
    profile: str | None  # the TRTMC profile this stands beside
    device: str
    dtype: str
    transformers: Path | None
    media_adaptation: Adaptation

    @classmethod
    def from_cli(cls, args: argparse.Namespace) -> CompareRequest:
        """The request, or a UserError (or a ValidationError of the settings) naming the option and the fix."""
        if args.startup_timeout <= 0:
            raise BadInput("--startup-timeout must be positive: the seconds the server may take to load the model")
        for option in ("checkpoint", "revision", "profile", "device", "dtype"):
            plain_value(f"--{option}", getattr(args, option))
        return cls(
            **cls.run_fields(args),
            checkpoint=args.checkpoint,
            revision=args.revision,
            profile=args.profile,
            device=args.device,
            dtype=args.dtype,
            transformers=args.transformers,
            media_adaptation=args.media_adaptation,
        )


def _target(request: CompareRequest) -> tuple[ServeTarget, str | None]:
    """The checkpoint to serve, and the TRTMC profile it stands beside (if named)."""
    profile, trtmc = request.profile, request.trtmc
    if profile is not None and not safe_name(profile):
        raise BadInput(f"--profile {profile!r} is not a profile name (letters, digits, '.', '_', '-')")
    if trtmc is not None:
        if profile is None:
            raise BadInput("--trtmc needs --profile NAME: the profile whose checkpoint is served")
        from ..inventory import run_inventory

        entries = {entry.profile: entry for entry in run_inventory(trtmc).entries}
        entry = entries.get(profile)
        if entry is None or not entry.checkpoint:
            raise BadInput(
                f"--profile {profile} is not a profile with a checkpoint in the inventory of {trtmc}; "
                "see `trtmc-videoqa inventory` for the profiles"
            )
        return serve_target(request.checkpoint or entry.checkpoint, request.revision or entry.revision), profile
    if not request.checkpoint:
        raise BadInput("compare needs --checkpoint ID|DIR, or --trtmc PATH with --profile NAME")
    return serve_target(request.checkpoint, request.revision), profile


def comparison_run(request: CompareRequest) -> ComparisonRun:
    target, compared = _target(request)
    return ComparisonRun(
        target=target,
        executable=find_transformers(request.transformers),
        device=request.device,
        dtype=request.dtype,
        adaptation=request.media_adaptation,
        compared_profile=compared,
        startup_timeout_s=request.startup_timeout_s,
    )


def run_compare(request: CompareRequest) -> int:
    """Check every input, then print the plan (--dry-run) or serve, qualify and report."""
    from .run_inputs import LONGEST_MODEL_NAME, checked_run_inputs
    from .run_tools import print_rows, run_with_tools

    comparison = comparison_run(request)
    if request.dry_run:
        print(
            f"comparison: {shown_name(comparison.target.model)} on {comparison.device} with transformers serve "
            f"({comparison.executable.name}), media adaptation {comparison.adaptation}, video transport "
            f"{request.settings.video_transport}; row {shown_name(comparison.profile)}, labelled comparison (not a "
            "TRTMC capability)"
        )
        return EXIT_OK
    # Checked as qualify checks its inputs; the API key is read (a bad --api-key-file is refused) but never sent:
    # the server is the one started here.
    workloads, _, notes = checked_run_inputs(request, self_test=False, model=LONGEST_MODEL_NAME)
    for note in notes:
        print(f"note: {one_line(note)}", file=sys.stderr)
    adaptations: list[str] = []

    def adapt(originals: list[Workload]) -> list[Workload]:  # under the output lock: the copy made for the server
        adapted, adaptation = comparison.workload(request.out, originals[0])
        adaptations.append(adaptation)
        return [adapted]

    def make_rows(adapted: list[Workload], tools: RunTools) -> list[ResultRow]:
        return [compare_row(request, adapted[0], tools, comparison, adaptations[0])]

    return print_rows(request, run_with_tools(request, workloads, None, make_rows, adapt=adapt))


def compare_row(
    request: CompareRequest, workload: Workload, tools: RunTools, comparison: ComparisonRun, adaptation: str
) -> ResultRow:
    """Start the server (unless the row is reused), qualify it as an endpoint on `workload` (the copy made for it,
    changed as `adaptation` says), stop it; the comparison row."""
    from ..ladders.endpoint import EndpointTarget, qualify_endpoint, row_key
    from ..plan.cache_keys import reusable
    from ..serving.process import ServerProcess, free_loopback_port
    from ..serving.transformers_serve import HEALTH_PATH, serve_argv, server_version
    from .run_tools import make_job

    job = make_job(request, workload, tools)
    facts = comparison.facts(server_version(comparison.executable), adaptation)
    identity = comparison.identity(facts)
    stated = {"sampling_where": "server", "media_adaptation": facts.media_adaptation, "device": comparison.device}
    frames = workload.spec.generation.extra_body.get("chat_template_kwargs", {}).get("num_frames")
    if isinstance(frames, int):
        stated["sampling_policy"] = f"uniform:{frames}"
    key = row_key(job, identity=identity, model=comparison.target.model, stated=stated, native=None, declared=None)
    previous = reusable(job.row_dir(comparison.profile), key, request.force)
    if previous is not None:  # nothing changed: no server start, no model load
        return previous
    port = free_loopback_port()  # loopback only: it fetches the clips from this run's loopback clip server too
    url = f"http://127.0.0.1:{port}"
    argv = serve_argv(
        comparison.executable,
        comparison.target,
        host="127.0.0.1",
        port=port,
        device=comparison.device,
        dtype=comparison.dtype,
    )
    tools.progress(f"starting transformers serve on {url} ({comparison.target.model}, {comparison.device})")
    with ServerProcess(
        argv,
        url=url,
        log_path=request.out / PRIVATE_DIR / SERVER_LOG,
        startup_timeout_s=comparison.startup_timeout_s,
        cwd=comparison.target.cwd,
        ready_path=HEALTH_PATH,
    ) as server:
        return qualify_endpoint(
            job,
            EndpointTarget(
                url=url,
                model=comparison.target.model,
                profile=comparison.profile,
                stated=stated,
                identity=identity,
                alive=lambda: server.alive,
                comparison=facts,
                serve_command=reproducible_command(argv),
            ),
        )


def cmd_compare(args: argparse.Namespace) -> int:
    return run_compare(CompareRequest.from_cli(args))


def add_arguments(compare: argparse.ArgumentParser) -> None:
    """The `compare` command's options; its handler."""
    from .qualify_args import settings_options

    compare.description = (
        "Start `transformers serve` on a checkpoint (a hub id, or the checkpoint of a TRTMC profile "
        "with --trtmc and --profile; a local folder too) on loopback, and run the endpoint ladder against it with "
        "the same workload over http. The row is labelled 'comparison (not a TRTMC capability)' and never counts "
        "in the group; `trtmc-videoqa report TRTMC_DIR COMPARE_DIR` shows it beside trtmc-server's."
    )
    add_compare_arguments(compare)
    compare.set_defaults(handler=cmd_compare, option_for_field=settings_options())

"""The options of `trtmc-videoqa qualify`, and which option each run setting comes from."""

from __future__ import annotations

import argparse
from pathlib import Path

# The option each RunSettings field comes from: a value the settings refuse is reported under the option's name.
OPTION_FOR_FIELD = {
    "repeats": "--repeats",
    "warmup": "--warmup",
    "concurrency": "--concurrency",
    "request_timeout_s": "--request-timeout",
    "aiperf_wall_limit_s": "--aiperf-wall-limit",
    "body_limit": "--body-limit",
    "max_tokens": "--max-tokens",
    "video_transport": "--video-transport",
}


def add_qualify_arguments(parser: argparse.ArgumentParser) -> None:
    _add_source_arguments(parser.add_argument_group("what to qualify (default: the reference self-test)"))
    add_run_arguments(parser.add_argument_group("the run"))


def _add_source_arguments(source: argparse._ArgumentGroup) -> None:
    source.add_argument("--trtmc", type=Path, metavar="PATH", help="a TRTMC checkout: every capable checkpoint")
    source.add_argument("--profile", action="append", metavar="NAME", help="only this profile (repeatable)")
    source.add_argument("--endpoint", metavar="URL", help="an already running OpenAI-compatible video chat server")
    source.add_argument("--model", metavar="NAME", help="the model name to send to --endpoint")
    source.add_argument(
        "--server-records",
        type=Path,
        metavar="FILE",
        help="the per-request records file --endpoint's server writes (trtmc-server --records), "
        "read after the run for the server's task time when responses carry none",
    )
    source.add_argument(
        "--native-url",
        metavar="URL",
        help="--endpoint's native Task route, in perf_serving's request shape (POST URL/v1/tasks/generate with "
        '{"request": {"prompt", "video_path": {"$file": ...}, "max_new_tokens", "temperature"}}): each question and '
        "clip once there and once through chat must give the same answer; without it identity is not-applicable",
    )
    source.add_argument(
        "--server-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server-side sampling or media-cache setting of --endpoint, recorded as stated",
    )


def add_run_arguments(run: argparse._ArgumentGroup) -> None:
    run.add_argument(
        "--workload",
        metavar="FILE|NAME",
        help="a workload file, or a built-in name "
        "(default: bigbuckbunny; the self-test uses synthetic and bigbuckbunny)",
    )
    run.add_argument("--out", type=Path, default=Path("artifacts"), metavar="DIR", help="artifact directory")
    run.add_argument("--repeats", type=int, default=5, help="times each (question, clip) is sent (default 5)")
    run.add_argument("--warmup", type=int, default=2, help="warmup requests, kept out of the results (default 2)")
    run.add_argument("--concurrency", type=int, default=1, help="concurrent requests (default 1)")
    run.add_argument("--request-timeout", type=float, default=60.0, help="seconds per request (default 60)")
    run.add_argument(
        "--max-tokens", type=int, metavar="N", help="the answers' token limit (default: the workload's own)"
    )
    run.add_argument("--aiperf-wall-limit", type=float, default=900.0, help="seconds for one AIPerf run")
    run.add_argument(
        "--body-limit",
        type=int,
        default=4 * 1024 * 1024,
        help="the server's --max-body-bytes, large enough for the clip (default 4 MiB)",
    )
    run.add_argument(
        "--video-transport",
        choices=["data-url", "http", "auto"],
        default="data-url",
        help="how requests carry the clip: data-url (default; base64 in the body, under --body-limit), http (an "
        "http://127.0.0.1 URL of a clip server this run starts; no body limit) or auto (data-url first, then http "
        "if the capability check is refused; the first accepted is kept for the row)",
    )
    run.add_argument("--aiperf", metavar="PATH", help="the aiperf executable (default: $TRTMC_VIDEOQA_AIPERF, PATH)")
    run.add_argument("--tokenizer", type=Path, metavar="DIR", help="a local tokenizer directory for AIPerf")
    run.add_argument(
        "--api-key-env",
        default="TRTMC_SERVE_TOKEN",
        metavar="NAME",
        help="environment variable holding the server's API key, if any (never written anywhere)",
    )
    run.add_argument(
        "--api-key-file",
        type=Path,
        metavar="PATH",
        help="a file holding the server's API key (first line; never written anywhere); wins over --api-key-env",
    )
    run.add_argument(
        "--startup-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds a server we start may take to get ready (default 600)",
    )
    run.add_argument("--bundle-cache", type=Path, metavar="DIR", help="where built bundles are kept")
    run.add_argument("--force", action="store_true", help="measure again even where inputs are unchanged")
    run.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")
    run.add_argument("--quiet", action="store_true", help="no progress lines (also when CI is set or on no terminal)")
    run.add_argument("--strict", action="store_true", help="exit 1 when an in-group row failed")

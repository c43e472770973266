"""TEST DOUBLE for `trtmc-server BUNDLE --model-name NAME ...`: serves the reference endpoint instead.

It takes trtmc-server's flags, checks the bundle is a test-double bundle, and runs the reference endpoint (a
labelled test double) on the same host, port, body limit and records file.

Fault knobs, from the environment: TRTMC_SERVER_DOUBLE_READY_AFTER_S (--ready-after-s),
TRTMC_SERVER_DOUBLE_OMIT_TASK_TIME_RATE (--omit-task-time-rate), TRTMC_SERVER_DOUBLE_ANSWER_TEXT (--answer-text),
and TRTMC_SERVER_DOUBLE_TEXT_ONLY (serve text_only_server.py instead: chat that refuses any video part, as TRTMC's
trtmc-server schema does today).
"""

import argparse
import json
import os
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(prog="trtmc-server (test double)")
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--model-name", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-body-bytes", type=int, default=1 << 20)
    parser.add_argument("--startup-timeout", type=float)
    parser.add_argument("--request-timeout", type=float)
    parser.add_argument("--records", type=Path)
    args = parser.parse_args()
    header = json.loads(args.bundle.read_bytes().split(b"\n", 1)[0])
    if not header.get("test_double"):
        print("trtmc-server test double: refusing a bundle that is not a test-double bundle", file=sys.stderr)
        return 2
    if os.environ.get("TRTMC_SERVER_DOUBLE_TEXT_ONLY"):  # chat that takes text parts only
        os.execv(sys.executable, [sys.executable, str(Path(__file__).with_name("text_only_server.py")), str(args.port)])
    argv = [
        sys.executable,
        "-m",
        "trtmc_videoqa.reference",
        "--host",
        args.host,
        "--port",
        str(args.port),
        "--max-body-bytes",
        str(args.max_body_bytes),
    ]
    if args.records:
        argv += ["--records", str(args.records)]
    if os.environ.get("TRTMC_SERVE_TOKEN"):  # like trtmc-server: the token comes from the environment, never argv
        argv += ["--api-key-env", "TRTMC_SERVE_TOKEN"]
    if os.environ.get("TRTMC_SERVER_DOUBLE_READY_AFTER_S"):  # a fault knob of the double: slow (or never) ready
        argv += ["--ready-after-s", os.environ["TRTMC_SERVER_DOUBLE_READY_AFTER_S"]]
    if os.environ.get("TRTMC_SERVER_DOUBLE_OMIT_TASK_TIME_RATE"):  # a server that hides some task times
        argv += ["--omit-task-time-rate", os.environ["TRTMC_SERVER_DOUBLE_OMIT_TASK_TIME_RATE"]]
    if os.environ.get("TRTMC_SERVER_DOUBLE_ANSWER_TEXT"):  # a model that answers garbage
        argv.append(f"--answer-text={os.environ['TRTMC_SERVER_DOUBLE_ANSWER_TEXT']}")
    os.execv(sys.executable, argv)


if __name__ == "__main__":
    sys.exit(main())

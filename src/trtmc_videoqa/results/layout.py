"""Every artifact path and file name of an output folder, in one place: where a run writes and a report reads.

<out>/checkpoints/<row>/result.json, command.txt, capability.json (and capability-native.json), identity.json,
    execution.jsonl, aiperf/
<out>/checkpoints/<row>/private/   raw logs and records, never published (nor is <out>/private/)
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

PRIVATE_DIR = "private"  # a folder of this name, at any depth, is not published: not scanned by the public check
CHECKPOINTS_DIR = "checkpoints"
RESULT_FILE = "result.json"
COMMAND_FILE = "command.txt"
CAPABILITY_FILE = "capability.json"
NATIVE_CAPABILITY_FILE = "capability-native.json"  # a video Task's one request through its native route
IDENTITY_FILE = "identity.json"
EXECUTION_FILE = "execution.jsonl"
AIPERF_DIR = "aiperf"
INVENTORY_FILE = "inventory.json"  # at the top of --out (a --trtmc run, `inventory --out`)
INVENTORY_MD = "inventory.md"
REPORT_HTML = "report.html"  # beside report.json, report.md and junit.xml at the top of --out
GUARD_FILE = "guard.json"  # under aiperf/: what the run's loopback guard forwarded and refused

# Raw logs and records, relative to a row folder (or, for the clip server, to --out).
BUILD_LOG = f"{PRIVATE_DIR}/build.log"
CORRECTNESS_LOG = f"{PRIVATE_DIR}/correctness.log"
SERVER_LOG = f"{PRIVATE_DIR}/server.log"
SERVER_RECORDS = f"{PRIVATE_DIR}/server-records.jsonl"
CLIP_SERVER_LOG = f"{PRIVATE_DIR}/clip-server.log"
# The raw bytes of a server's answer whose text the row holds changed (a lone surrogate escaped, a number no JSON
# reader holds): one file per request, named by its request id (raw_answer_file).
RAW_ANSWERS_DIR = f"{PRIVATE_DIR}/raw-answers"
TRACEBACK_FILE = f"{PRIVATE_DIR}/traceback.txt"  # an exception of ours that ended the row, in full
# Under --out: the temporary folder of every child a run starts, removed when the run ends (common/scratch.py).
RUN_SCRATCH_DIR = f"{PRIVATE_DIR}/tmp"


def checkpoints_dir(out: Path) -> Path:
    return out / CHECKPOINTS_DIR


_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,149}")  # a request id that is a file name as it is


def raw_answer_file(request_id: str) -> str:
    """One request's raw answer under RAW_ANSWERS_DIR (row-relative); an id unfit to be a file name goes by its
    digest."""
    if not _PLAIN_ID.fullmatch(request_id):
        request_id = "request-" + hashlib.sha256(request_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{RAW_ANSWERS_DIR}/{request_id}.raw"

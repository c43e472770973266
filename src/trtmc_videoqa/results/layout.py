"""Every artifact path and file name of an output folder, in one place: where a run writes and a report reads.

<out>/checkpoints/<row>/result.json, command.txt, capability.json (and capability-native.json), identity.json,
    execution.jsonl, aiperf/
<out>/checkpoints/<row>/private/   raw logs and records, never published (nor is <out>/private/)
"""

from __future__ import annotations

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
TRACEBACK_FILE = f"{PRIVATE_DIR}/traceback.txt"  # an exception of ours that ended the row, in full


def checkpoints_dir(out: Path) -> Path:
    return out / CHECKPOINTS_DIR

"""Every artifact path and file name of an output folder, in one place: where a run writes and a report reads.

<out>/checkpoints/<row>/result.json, command.txt, capability.json (and capability-native.json), identity.json,
    execution.jsonl, aiperf/
<out>/checkpoints/<row>/private/   raw logs and records, never published (nor is <out>/private/)
<out>/report.json, report.md, report.html, junit.xml, inventory.json, inventory.md, workload/<name>/

tests/test_source_limits.py finds an artifact name typed anywhere else in the package.
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
SERVED_MODEL_FILE = "served-model.json"  # an endpoint row's --model as given: measured, the user's own value
AIPERF_DIR = "aiperf"
INVENTORY_FILE = "inventory.json"  # at the top of --out (a --trtmc run, `inventory --out`)
INVENTORY_MD = "inventory.md"
REPORT_HTML = "report.html"  # beside report.json, report.md and junit.xml at the top of --out
GUARD_FILE = "guard.json"  # under aiperf/: what the run's loopback guard forwarded and refused
REQUESTS_FILE = "requests.jsonl"  # every planned request joined to its record, its task time and its grade
GRADING_FILE = "grading.json"
OUTPUT_CHECK_FILE = "output_check.json"
CORRECTNESS_DIR = "correctness"  # the family's correctness command writes its artifacts here, by its own names
FAMILY_RESULT_FILE = "result.json"  # the family's runner's name: correctness/<profile>/result.json
JUNIT_FILE = "junit.xml"  # the report's, at the top of --out; also what the family's run is told to write

# Under a row's aiperf/: what its AIPerf run was given and how it ended, and AIPerf's own export folder.
AIPERF_INPUTS_FILE = "inputs.jsonl"  # AIPerf's input file: the request bodies planned
AIPERF_PLAN_FILE = "plan.json"
AIPERF_CONFIG_FILE = "aiperf-config.yaml"  # with an API key only: names the variable AIPerf reads it from
AIPERF_OUTCOME_FILE = "outcome.json"
AIPERF_EXPORT_DIR = "export"  # AIPerf's --artifact-dir
AIPERF_PLAN = f"{AIPERF_DIR}/{AIPERF_PLAN_FILE}"  # row-relative, as stage evidence names them
AIPERF_OUTCOME = f"{AIPERF_DIR}/{AIPERF_OUTCOME_FILE}"
AIPERF_EXPORT = f"{AIPERF_DIR}/{AIPERF_EXPORT_DIR}"
AIPERF_PREVIOUS_EXPORT = f"{AIPERF_EXPORT}.previous"  # an earlier attempt's export, set aside by the next one
# What AIPerf 0.13.0 writes in its export folder, by its own names (aiperf/ imports only common/, so it keeps a copy
# of the ones it reads, held equal to these by tests/test_source_limits.py).
AIPERF_RAW_EXPORT = "profile_export_raw.jsonl"
AIPERF_RECORDS_EXPORT = "profile_export.jsonl"
AIPERF_INPUTS_EXPORT = "inputs.json"
AIPERF_SUMMARY_EXPORT = "profile_export_aiperf.json"
AIPERF_RAW_RECORDS_DIR = "raw_records"  # per record processor, before AIPerf consolidates them
AIPERF_OWN_LOGS_DIR = "logs"  # AIPerf's own log folder (kept under private/ as AIPERF_LOGS)

# At the top of --out, beside checkpoints/ (and inventory.json, report.html above).
REPORT_JSON = "report.json"
REPORT_MD = "report.md"
MATRIX_FILE = "matrix.json"  # the capable profiles for a CI matrix (containers/inventory-rows.sh, the Dagger module)
WORKLOAD_DIR = "workload"  # workload/<name>/: each workload's clip manifests, frame strips and sampling
WORKLOAD_FILES_DIR = "files"  # workload/<name>/files/: the workload as it ran, clips included
COMPARISON_WORKLOAD_DIR = "comparison-workload"  # compare: the copy of the workload the server was asked about
TOKENIZER_DIR = "tokenizer"  # the tokenizer AIPerf counted with, when none was given
BUNDLES_DIR = "bundles"  # the bundle cache when --bundle-cache names none (never published)
# In workload/<name>/ (workloads/artifacts.py); WORKLOAD_FILE is also a workload's own file name.
WORKLOAD_FILE = "workload.json"
PREPARED_STAMP = "prepared.digest.json"  # two dots: no clip id ("^[a-z][a-z0-9-]*$") can name this file
SAMPLING_FILE = "sampling.json"
FRAME_STRIP = "frames.png"  # the first clip's strip, which the report shows

# refresh --out: both sides' inventories and their reconciliation.
PINNED_INVENTORY_FILE = "inventory.pinned.json"
MAIN_INVENTORY_FILE = "inventory.main.json"
RECONCILIATION_FILE = "reconciliation.json"
RECONCILIATION_MD = "reconciliation.md"

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
AIPERF_LOG = f"{PRIVATE_DIR}/aiperf.log"  # AIPerf's stdout and stderr
AIPERF_LOGS = f"{PRIVATE_DIR}/aiperf-logs"  # AIPerf's own log folder, moved out of its export
NATIVE_SERVER_LOG = f"{PRIVATE_DIR}/native-server.log"  # perf_serving, identity's native side of a TRTMC row
NATIVE_RECORDS = f"{PRIVATE_DIR}/native-records.jsonl"  # perf_serving's --records
NATIVE_SCRATCH = f"{PRIVATE_DIR}/native-scratch"  # perf_serving's --scratch: the raw files its requests carried
NATIVE_FRAMES = f"{PRIVATE_DIR}/native-frames"  # a video Task's frames as sent: <clip id>/ PNG files and their times
FRAME_FILE = "frame-{index:06d}.png"  # one frame there, by its index (str.format)
FRAME_TIMES_FILE = "times.json"  # beside a video Task's frame files: each frame's time
# Relative to --out: the self-test's reference endpoint, and compare's server.
REFERENCE_RECORDS = f"{PRIVATE_DIR}/reference/records.jsonl"
REFERENCE_LOG = f"{PRIVATE_DIR}/reference/server.log"
COMPARISON_SERVER_LOG = f"{PRIVATE_DIR}/transformers-serve.log"
# Under --out: the temporary folder of every child a run starts, removed when the run ends (common/scratch.py).
RUN_SCRATCH_DIR = f"{PRIVATE_DIR}/tmp"
# Under --out (rows/staging.py): each row is built in ROWS_STAGING/<row>/ and renamed into checkpoints/<row>/ once
# finished; the row it replaces waits in ROWS_EARLIER/<row>/ between the two renames; an interrupted attempt over an
# earlier row is kept whole in ROWS_INTERRUPTED/<row>/. All three on the same filesystem as checkpoints/, private.
ROWS_STAGING = f"{PRIVATE_DIR}/rows/staging"
ROWS_EARLIER = f"{PRIVATE_DIR}/rows/earlier"
ROWS_INTERRUPTED = f"{PRIVATE_DIR}/rows/interrupted"
# In checkpoints/, beside the row folder it names: the record of an attempt interrupted over that earlier row
# (results.InterruptedAttempt). A leading dot: no row folder can have this name (common/safe_names.py).
INTERRUPTED_ATTEMPT_PREFIX = ".interrupted."
INTERRUPTED_ATTEMPT_GLOB = f"{INTERRUPTED_ATTEMPT_PREFIX}*.json"

# Everything the tool writes at the top of an output folder (qualify, compare, report, inventory, refresh, the
# matrix; beside them only the output lock, common/output_lock.py's LOCK_NAME): the publish step rewrites files
# under these names only, never a file of the user's beside them.
OUTPUT_TOP_NAMES = frozenset(
    {
        CHECKPOINTS_DIR,
        WORKLOAD_DIR,
        COMPARISON_WORKLOAD_DIR,
        TOKENIZER_DIR,
        BUNDLES_DIR,
        PRIVATE_DIR,
        REPORT_JSON,
        REPORT_MD,
        REPORT_HTML,
        JUNIT_FILE,
        INVENTORY_FILE,
        INVENTORY_MD,
        MATRIX_FILE,
        PINNED_INVENTORY_FILE,
        MAIN_INVENTORY_FILE,
        RECONCILIATION_FILE,
        RECONCILIATION_MD,
    }
)


def checkpoints_dir(out: Path) -> Path:
    return out / CHECKPOINTS_DIR


def interrupted_attempt_file(row_dir_name: str) -> str:
    """The record of an attempt interrupted over the row in checkpoints/<row_dir_name>/, beside it."""
    return f"{INTERRUPTED_ATTEMPT_PREFIX}{row_dir_name}.json"


def workload_dir(out: Path, name: str) -> Path:
    """workload/<name>/ under an output folder: the workload's artifacts, and files/ once published."""
    return out / WORKLOAD_DIR / name


def clip_manifest_file(clip_id: str) -> str:
    """A clip's manifest in workload/<name>/."""
    return f"{clip_id}.json"


def frame_strip_file(clip_id: str, *, first: bool) -> str:
    """A clip's frame strip in workload/<name>/: the first clip's is FRAME_STRIP."""
    return FRAME_STRIP if first else f"frames-{clip_id}.png"


def schema_file(name: str) -> str:
    """A schema exported by `trtmc-videoqa schemas` (schemas/<name>.schema.json)."""
    return f"{name}.schema.json"


_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,149}")  # a request id that is a file name as it is


def raw_answer_file(request_id: str) -> str:
    """One request's raw answer under RAW_ANSWERS_DIR (row-relative); an id unfit to be a file name goes by its
    digest."""
    if not _PLAIN_ID.fullmatch(request_id):
        request_id = "request-" + hashlib.sha256(request_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{RAW_ANSWERS_DIR}/{request_id}.raw"


# A sweep's or repeat's further AIPerf runs (docs/throughput.md): the first run keeps aiperf/ itself; each further one
# has its own folder under it, named by its label (`c4`, `c4-run2`, `rate2p5`), with the same file names inside and
# its joined requests beside them; its raw logs under the row's private/ folder.
AIPERF_RUN_LABEL = re.compile(r"(c[0-9]+|rate[0-9p]+)(-run[0-9]+)?")


def aiperf_run_dir(label: str) -> str:
    """A further AIPerf run's folder (row-relative)."""
    if not AIPERF_RUN_LABEL.fullmatch(label):
        raise ValueError(f"an AIPerf run is labelled by us, plainly; got {label!r}")
    return f"{AIPERF_DIR}/{label}"


def aiperf_run_log(label: str) -> str:
    """A further AIPerf run's output (row-relative, private)."""
    return f"{PRIVATE_DIR}/aiperf-{label}.log"


def aiperf_run_logs(label: str) -> str:
    """A further AIPerf run's own log folder, moved out of its export (row-relative, private)."""
    return f"{AIPERF_LOGS}-{label}"

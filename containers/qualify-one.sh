#!/bin/sh
# One checkpoint's whole step chain in ONE exec: `trtmc-videoqa qualify --profile P` builds the bundle, runs the
# family's correctness, starts trtmc-server on 127.0.0.1 and runs AIPerf beside it (trtmc-server serves loopback
# only, so server and client share this exec). Whatever happens, OUT_DIR/checkpoints/P/result.json exists after
# it: a crash, bad input or the wall limit becomes a failed row carrying the step's output (private/qualify.log, a
# raw log: never published), so the artifacts are still exported. Exits 0 unless that row could not be written:
# qualify's own code (0 qualified, 3 failed, 4 blocked or unsupported, 1 a tool error, 2 bad input, 124/137 the wall
# limit) is the row's business, kept as "exit status: N" in private/qualify.log, and the merged report says it.
# usage: qualify-one.sh PROFILE TRTMC_DIR OUT_DIR LIMIT_S [qualify options...]
set -u
profile=$1 trtmc=$2 out=$3 limit=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp)
code=0
timeout --kill-after=120 "$limit" \
  trtmc-videoqa qualify --trtmc "$trtmc" --profile "$profile" --out "$out" "$@" >"$log" 2>&1 || code=$?
cat "$log"
row="$out/checkpoints/$profile"
mkdir -p "$row/private"
{ cat "$log"; echo "exit status: $code"; } >"$row/private/qualify.log"
rm -f "$log"
if [ ! -f "$row/result.json" ]; then
  python3 "$here/failed_row.py" --profile "$profile" --exit-code "$code" --limit "$limit" \
    --log "$row/private/qualify.log" --out "$row/result.json" \
    --command "trtmc-videoqa qualify --trtmc $trtmc --profile $profile --out $out $*"
fi

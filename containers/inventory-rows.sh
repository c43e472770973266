#!/bin/sh
# The audit and the rows that need no GPU, on the CPU image, into OUT_DIR:
#   inventory.json, inventory.md, matrix.json (the capable profiles, as `trtmc-videoqa matrix` prints them),
#   checkpoints/<profile>/ for every in-group checkpoint that is not capable (unsupported, with its evidence),
#   and their report. A capable profile's row is left out here: each is qualified on a GPU in an exec of its own
#   (on this CPU image it would only read "blocked"). Variants with the capability (TP, quantized ...) are not in
#   matrix.json, so their rows stay here as "blocked" with the reason; `qualify --profile NAME` runs one on a GPU.
# usage: inventory-rows.sh TRTMC_DIR OUT_DIR [qualify options, e.g. --workload NAME]
set -eu
trtmc=$1 out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
matrix=$(mktemp)
trtmc-videoqa matrix --trtmc "$trtmc" >"$matrix"
# --exit-zero: a report-only job. Its capable rows are "blocked" here (no GPU) and its others "unsupported", so the
# verdict is 4 (nothing qualifiable) by design; under `set -eu` only bad input (2), a tool error (1), a public-check
# hit (3) or a signal stops the recipe.
trtmc-videoqa qualify --trtmc "$trtmc" --out "$out" --exit-zero "$@"
mv "$matrix" "$out/matrix.json"
python3 "$here/recipe.py" profiles "$out/matrix.json" >"$out/.capable"
while IFS= read -r profile; do
  rm -rf "${out:?}/checkpoints/$profile"
done <"$out/.capable"
rm -f "$out/.capable"
rm -f "$out/report.json" "$out/report.md" "$out/report.html" "$out/junit.xml"
if ls "$out"/checkpoints/*/result.json >/dev/null 2>&1; then
  trtmc-videoqa report "$out" --out "$out" --title "trtmc-videoqa inventory: the rows that need no GPU"
fi
echo "capable profiles: $(cat "$out/matrix.json")"

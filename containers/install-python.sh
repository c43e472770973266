#!/bin/sh
# The Python side of an image, the same script for the CPU image and for the CUDA/TRTMC runtime:
#   1. the published aiperf at the pin file's version, from the package index, in an environment of its own
#      (the package finds it through TRTMC_VIDEOQA_AIPERF);
#   2. this package into TARGET_VENV (made when missing; the runtime passes TRTMC's environment, so the
#      families' correctness tests run with TRTMC's Python), with its own dependencies except aiperf and
#      dagger-io (see recipe.py).
# The index is pip's own $PIP_INDEX_URL; CA certificates in containers/certs/ (*.pem, *.crt) are used by pip
# during this install only. Nothing here writes a credential anywhere.
# usage: install-python.sh cpu|runtime PACKAGE_SRC TARGET_VENV AIPERF_VENV
set -eu
image=$1 src=$2 target=$3 aiperf_venv=$4
here=$(cd "$(dirname "$0")" && pwd)
pins=${TRTMC_VIDEOQA_PINS:-$here/pins.toml}
pin() { python3 "$here/recipe.py" pin "$pins" "$1"; }

wanted=$(pin "images.$image.python")
found=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$found" != "$wanted" ]; then
  echo "notice: the pin file names Python $wanted for the $image image; this base has $found" >&2
fi

bundle=""
for cert in "$here"/certs/*.pem "$here"/certs/*.crt; do
  if [ -f "$cert" ]; then
    bundle=${bundle:-$(mktemp)}
    cat "$cert" >>"$bundle"
  fi
done
if [ -n "$bundle" ]; then
  export PIP_CERT="$bundle"
fi

make_venv() {
  if [ ! -x "$1/bin/python" ]; then
    python3 -m venv "$1" || {
      echo "python3 cannot make a virtual environment here: add python3-venv to the system packages" >&2
      exit 2
    }
  fi
}

aiperf=$(pin aiperf.requirement)
make_venv "$aiperf_venv"
"$aiperf_venv/bin/python" -m pip install "$aiperf"
"$aiperf_venv/bin/python" -c 'import importlib.metadata as m, sys
found = "aiperf==" + m.version("aiperf")
sys.exit(0 if found == sys.argv[1] else f"{found} installed, the pin file says {sys.argv[1]}")' "$aiperf"

make_venv "$target"
requirements=$(mktemp)
python3 "$here/recipe.py" requirements "$src/pyproject.toml" >"$requirements"
"$target/bin/python" -m pip install --requirement "$requirements"
"$target/bin/python" -m pip install --no-deps "$src"
rm -f "$requirements" ${bundle:+"$bundle"}
"$target/bin/trtmc-videoqa" --version
echo "aiperf: $aiperf_venv/bin/aiperf ($aiperf)"

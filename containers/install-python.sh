#!/bin/sh
# The Python side of an image, the same script for the CPU image and for the CUDA/TRTMC runtime, in two phases so
# that an image rebuilt after a source change reinstalls only the package (a layer of its own, the last):
#   dependencies  reads PACKAGE_SRC/pyproject.toml alone:
#                 1. the published aiperf at the pin file's version, from the package index, in an environment of
#                    its own (the package finds it through TRTMC_VIDEOQA_AIPERF);
#                 2. into TARGET_VENV (made when missing; the runtime passes TRTMC's environment, so the families'
#                    correctness tests run with TRTMC's Python) this package's dependencies except aiperf and
#                    dagger-io, and its build backend (see recipe.py);
#   package       this package from PACKAGE_SRC into TARGET_VENV, with --no-deps and no build isolation: nothing
#                 fetched, its dependencies are the first phase's.
# The index is pip's own $PIP_INDEX_URL; CA certificates in containers/certs/ (*.pem, *.crt) are used by pip
# during this install only. Nothing here writes a credential anywhere.
# usage: install-python.sh dependencies|package cpu|runtime PACKAGE_SRC TARGET_VENV AIPERF_VENV
set -eu
phase=$1 image=$2 src=$3 target=$4 aiperf_venv=$5
case $phase in
  dependencies|package) ;;
  *) echo "install-python.sh: the phase is dependencies or package, not '$phase'" >&2; exit 2 ;;
esac
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
if [ "$phase" = dependencies ]; then
  make_venv "$aiperf_venv"
  "$aiperf_venv/bin/python" -m pip install "$aiperf"
  "$aiperf_venv/bin/python" -c 'import importlib.metadata as m, sys
found = "aiperf==" + m.version("aiperf")
sys.exit(0 if found == sys.argv[1] else f"{found} installed, the pin file says {sys.argv[1]}")' "$aiperf"
  make_venv "$target"
  requirements=$(mktemp)
  python3 "$here/recipe.py" requirements "$src/pyproject.toml" >"$requirements"
  python3 "$here/recipe.py" build-requirements "$src/pyproject.toml" >>"$requirements"
  "$target/bin/python" -m pip install --requirement "$requirements"
  rm -f "$requirements" ${bundle:+"$bundle"}
  echo "aiperf: $aiperf_venv/bin/aiperf ($aiperf); the dependencies of $src/pyproject.toml in $target"
else
  "$target/bin/python" -m pip install --no-deps --no-build-isolation "$src"
  rm -f ${bundle:+"$bundle"}
  "$target/bin/trtmc-videoqa" --version
  echo "aiperf: $aiperf_venv/bin/aiperf ($aiperf)"
fi

#!/bin/sh
# The comparison image's extra Python packages: this package's `real-server` extra (transformers[serving], torch,
# torchvision, torchcodec at the versions pyproject.toml pins) into the environment install-python.sh made. Torch
# from the package index carries its own CUDA libraries, so the GPU needs only the driver the runner attaches.
# usage: install-comparison.sh PACKAGE_SRC TARGET_VENV
set -eu
src=$1 target=$2
here=$(cd "$(dirname "$0")" && pwd)
requirements=$(mktemp)
python3 "$here/recipe.py" extra "$src/pyproject.toml" real-server >"$requirements"
"$target/bin/python" -m pip install --requirement "$requirements"
rm -f "$requirements"
"$target/bin/transformers" version

#!/bin/sh
# TRTMC built per its own source-build guide, on the CUDA + TensorRT base of the pin file:
#   1. a virtual environment over the base image's Python (which has TensorRT), as TRTMC's development image makes;
#   2. TRTMC's Python package there (`pip install -e . -C py-only=true`; it brings `trtmc` and `trtmc-server`),
#      with its dependencies, since this base is not TRTMC's development image; CPU torch as that image has;
#   3. the native runtime with CMake + Ninja for ONE CUDA architecture: TRTMC_CUDA_ARCH (90 = sm_90, H200), with
#      the examples, which hold perf_serving's trtmc_benchmark_worker (the native side of the identity check).
# ccache is the compiler launcher when CCACHE_DIR is set (the Dagger module mounts a cache volume there).
# usage: build-trtmc.sh SOURCE BUILD_DIR VENV
#   TRTMC_CUDA_ARCH (90)  TRTMC_BUILD_TESTS (ON: the families' correctness tests use the test probes)
#   TRTMC_BUILD_TARGETS (all)  TRTMC_CMAKE_ARGS (more -D options)  TORCH_INDEX_URL (the CPU wheel index)
set -eu
src=$1 build=$2 venv=$3
arch=${TRTMC_CUDA_ARCH:-90}
torch_index=${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}
if [ ! -f "$src/CMakeLists.txt" ] || [ ! -f "$src/pyproject.toml" ]; then
  echo "$src is not a TRTMC checkout (no CMakeLists.txt and pyproject.toml at its root)" >&2
  exit 2
fi
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv --system-site-packages "$venv"
fi
ln -sf "$(command -v cmake)" "$venv/bin/cmake"
"$venv/bin/python" -m pip install -U pip
"$venv/bin/python" -m pip install torch --index-url "$torch_index"
(cd "$src" && "$venv/bin/python" -m pip install -e ".[serve]" -C py-only=true)

launcher=""
if [ -n "${CCACHE_DIR:-}" ] && command -v ccache >/dev/null; then
  launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"
fi
# shellcheck disable=SC2086  # $launcher and $TRTMC_CMAKE_ARGS are lists of options
PATH="$venv/bin:$PATH" cmake -S "$src" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="${arch}-real" \
  -DTRTMC_BUILD_BACKEND_TRT=ON \
  -DTRTMC_BUILD_BACKEND_RTX=OFF \
  -DTRTMC_BUILD_TESTS="${TRTMC_BUILD_TESTS:-ON}" \
  -DTRTMC_BUILD_BENCHMARKS=OFF \
  -DTRTMC_BUILD_EXAMPLES=ON \
  -DTRTMC_ENABLE_LIBTORCH_MULTINOMIAL=OFF \
  $launcher ${TRTMC_CMAKE_ARGS:-}
# shellcheck disable=SC2086
PATH="$venv/bin:$PATH" cmake --build "$build" --parallel "$(nproc)" ${TRTMC_BUILD_TARGETS:+--target $TRTMC_BUILD_TARGETS}
if [ -n "${CCACHE_DIR:-}" ] && command -v ccache >/dev/null; then
  ccache --show-stats || true
fi
for tool in trtmc trtmc-server trtmc_benchmark_worker; do
  if ! PATH="$build:$venv/bin:$PATH" command -v "$tool" >/dev/null; then
    echo "warning: $tool is not on PATH after the build; rows that need it will be 'blocked' with that reason" >&2
  fi
done

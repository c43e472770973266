# The CUDA + TensorRT runtime: the pin file's runtime base, TRTMC fetched at the pinned commit and built per its
# own source-build guide for one CUDA architecture, the published aiperf in an environment of its own, and this
# package in TRTMC's environment. The Dagger module builds the same image step by step with the same scripts
# (with cache volumes for pip and ccache, which a plain build has not). From the repository root:
#   docker build -f containers/runtime.Dockerfile -t trtmc-videoqa-runtime .
#   docker run --rm --gpus all -e HF_TOKEN -v "$PWD/artifacts:/work/artifacts" trtmc-videoqa-runtime \
#     trtmc-videoqa qualify --trtmc /opt/trtmc/src --profile NAME --out /work/artifacts
# Build arguments: BASE_IMAGE (default: images.runtime of containers/pins.toml, by digest when one is pinned),
# CUDA_ARCH (90: sm_90, the H200), PIP_INDEX_URL, TORCH_INDEX_URL (TRTMC's CPU torch), APT_PACKAGES (default:
# containers/packages/runtime.txt). No token is needed to build; HF_TOKEN is given to `docker run` only.
ARG BASE_IMAGE=nvcr.io/nvidia/tensorrt:26.07-py3
FROM ${BASE_IMAGE}
ARG BASE_IMAGE
ARG CUDA_ARCH=90
ARG PIP_INDEX_URL=https://pypi.org/simple
# pip's own too; declared, or the classic builder drops it unused (no default: unset unless given)
ARG PIP_EXTRA_INDEX_URL
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG APT_PACKAGES=
LABEL org.opencontainers.image.title="trtmc-videoqa-runtime" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
ENV DEBIAN_FRONTEND=noninteractive \
    TRTMC_VIDEOQA_PINS=/opt/trtmc-videoqa/src/containers/pins.toml \
    TRTMC_VIDEOQA_AIPERF=/opt/aiperf/bin/aiperf \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/trtmc/build:/opt/venv/bin:$PATH \
    TRTMC_RUNTIME_ROOT=/opt/trtmc/build \
    TRTMC_MODEL_PLUGIN_DIR=/opt/trtmc/build/models \
    TRT_LIB_DIR=/usr/lib/x86_64-linux-gnu \
    TRT_INC_DIR=/usr/include/x86_64-linux-gnu \
    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:/opt/venv/lib/python3.12/site-packages/tvm_ffi/lib:/usr/local/cuda/lib64 \
    HF_HOME=/cache/huggingface \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# Only what the slow TRTMC build reads comes first, so editing another recipe file does not rebuild TRTMC.
COPY containers/system-packages.sh containers/fetch-trtmc.sh containers/build-trtmc.sh containers/recipe.py containers/pins.toml /opt/trtmc-videoqa/src/containers/
COPY containers/packages/ /opt/trtmc-videoqa/src/containers/packages/
RUN sh /opt/trtmc-videoqa/src/containers/system-packages.sh runtime
RUN sh /opt/trtmc-videoqa/src/containers/fetch-trtmc.sh /opt/trtmc/src
RUN TRTMC_CUDA_ARCH="${CUDA_ARCH}" sh /opt/trtmc-videoqa/src/containers/build-trtmc.sh /opt/trtmc/src /opt/trtmc/build /opt/venv
# Then aiperf and the dependencies pyproject.toml names, and last the package alone (--no-deps): a source change
# rebuilds that last layer only.
COPY containers/install-python.sh /opt/trtmc-videoqa/src/containers/
COPY containers/certs/ /opt/trtmc-videoqa/src/containers/certs/
COPY pyproject.toml /opt/trtmc-videoqa/src/
RUN sh /opt/trtmc-videoqa/src/containers/install-python.sh dependencies runtime /opt/trtmc-videoqa/src /opt/venv /opt/aiperf
COPY containers/ /opt/trtmc-videoqa/src/containers/
COPY README.md /opt/trtmc-videoqa/src/
COPY src/ /opt/trtmc-videoqa/src/src/
RUN sh /opt/trtmc-videoqa/src/containers/install-python.sh package runtime /opt/trtmc-videoqa/src /opt/venv /opt/aiperf
WORKDIR /work
CMD ["trtmc-videoqa", "doctor"]

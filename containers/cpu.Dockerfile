# The CPU image: this package and the published aiperf (each in an environment of its own) on the pin file's
# CPU base. The Dagger module builds the same image step by step with the same scripts. From the repository root:
#   docker build -f containers/cpu.Dockerfile -t trtmc-videoqa-cpu .
#   docker run --rm -v "$PWD/artifacts:/work/artifacts" trtmc-videoqa-cpu        # the reference self-test
# Build arguments: BASE_IMAGE (default: images.cpu of containers/pins.toml, by digest when one is pinned),
# PIP_INDEX_URL (pip's own variable; never a URL with a password in it: build arguments show in the image
# history), APT_PACKAGES (default: containers/packages/cpu.txt; "none" for a base that has them). A CA bundle
# for the index goes into containers/certs/. Classic builder and BuildKit alike: no BuildKit-only syntax.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}
ARG BASE_IMAGE
ARG PIP_INDEX_URL=https://pypi.org/simple
# pip's own too; declared, or the classic builder drops it unused (no default: unset unless given)
ARG PIP_EXTRA_INDEX_URL
ARG APT_PACKAGES=
LABEL org.opencontainers.image.title="trtmc-videoqa-cpu" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
ENV TRTMC_VIDEOQA_PINS=/opt/trtmc-videoqa/src/containers/pins.toml \
    TRTMC_VIDEOQA_AIPERF=/opt/aiperf/bin/aiperf \
    PATH=/opt/trtmc-videoqa/venv/bin:$PATH \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# What does not change with the source comes first (the system packages, aiperf, the dependencies pyproject.toml
# names), so a source change rebuilds only the last layer: the package installed with --no-deps.
COPY containers/system-packages.sh containers/install-python.sh containers/recipe.py containers/pins.toml /opt/trtmc-videoqa/src/containers/
COPY containers/packages/ /opt/trtmc-videoqa/src/containers/packages/
COPY containers/certs/ /opt/trtmc-videoqa/src/containers/certs/
RUN sh /opt/trtmc-videoqa/src/containers/system-packages.sh cpu
COPY pyproject.toml /opt/trtmc-videoqa/src/
RUN sh /opt/trtmc-videoqa/src/containers/install-python.sh dependencies cpu /opt/trtmc-videoqa/src /opt/trtmc-videoqa/venv /opt/aiperf
COPY containers/ /opt/trtmc-videoqa/src/containers/
COPY README.md /opt/trtmc-videoqa/src/
COPY src/ /opt/trtmc-videoqa/src/src/
RUN sh /opt/trtmc-videoqa/src/containers/install-python.sh package cpu /opt/trtmc-videoqa/src /opt/trtmc-videoqa/venv /opt/aiperf
WORKDIR /work
CMD ["trtmc-videoqa", "qualify", "--out", "/work/artifacts"]

#!/bin/sh
# A Docker engine of one's own, for the container test (tests/test_container_run.py, started by .ci/run) and for a
# developer on a machine with no Docker daemon or no image registry: Debian's docker.io (containerd + dockerd) on a
# socket, data and state directories under DIR only, without the default bridge or iptables rules (builds and runs
# use the host network), and a base image made here with debootstrap from this machine's own apt sources.
#
#   local-docker.sh install              apt-get install what is missing of docker.io and debootstrap (root)
#   local-docker.sh start DIR            start containerd and dockerd under DIR (new or empty), import the local
#                                        base image and print the environment to use:  eval "$(... start DIR)"
#   local-docker.sh build [TAG] [ARG..]  docker build -f containers/cpu.Dockerfile FROM the local base
#                                        (default TAG trtmc-videoqa-cpu), reaching the package index as this
#                                        machine's pip does (host_index.py: the index address and the CA bundle,
#                                        nothing local, no credential); ARGs go to docker build
#   local-docker.sh stop DIR             stop both daemons, unmount what they left, keep the image store (below),
#                                        remove DIR
#
# start and stop need root. Cache: $TRTMC_VIDEOQA_CACHE (default /var/cache/trtmc-videoqa) keeps
#   base-SUITE-ARCH-KEY.tar  the debootstrapped root file system, keyed by suite, mirror, architecture, variant and
#                            package list, and debs/, the .debs it was made of;
#   images/                  the image store (dockerd's data directory) of the last engine stopped cleanly, with
#                            one image in it: the last build (and its base), intermediate layers included, which the
#                            classic builder reuses as its cache: after a source change only the steps from
#                            `COPY src/` on run again. stop keeps it by renaming DIR/data (a rename: nothing is
#                            copied, never half-written; only after dockerd exited on its own, every container
#                            and every other image removed first); start takes it by renaming it into its DIR, so
#                            one engine at a time has it and another starts empty. Not kept across file systems.
# The rest of the engine (daemons, socket, containers, DIR) never outlives stop. The suite and the mirror are this
# machine's (apt's own reading of its sources, deb822 or one-line); TRTMC_VIDEOQA_BASE_SUITE and
# TRTMC_VIDEOQA_BASE_MIRROR override them.
set -eu
PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
MARK=.trtmc-videoqa-local-docker
started=""
BASE_PACKAGES="python3 python3-venv ca-certificates"  # what the recipes need of a base: python3 >= 3.11, venv
VARIANT=minbase
cache=${TRTMC_VIDEOQA_CACHE:-/var/cache/trtmc-videoqa}
LAST_BUILD=trtmc-videoqa-last-build:cpu  # the engine's name for its last build: the one image stop keeps

say() { echo "local-docker: $*" >&2; }
die() { say "$*${started:+; to remove what was started: sh containers/local-docker.sh stop $started}"; exit 2; }
need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root (a Docker daemon and debootstrap do)"; }
have() { command -v "$1" >/dev/null 2>&1; }

install() {
  need_root install
  missing=""
  for tool in dockerd containerd runc; do
    have "$tool" || missing="docker.io"
  done
  have debootstrap || missing="$missing debootstrap"
  if [ -z "$missing" ]; then
    say "dockerd, containerd, runc and debootstrap are installed"
    return 0
  fi
  say "installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  # shellcheck disable=SC2086  # one word per package
  apt-get install -y -q --no-install-recommends $missing >&2
}

# Processes we started, by their pid file, only while their command line still names DIR.
stop_pid() {
  pidfile=$1 dir=$2 limit=$3
  [ -s "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  ours "$pid" "$dir" || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "$limit" ]; do
    sleep 1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "pid $pid did not stop in ${limit}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    return 1
  fi
}

ours() { [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF "$2/"; }

mounts_under() { awk -v d="$1/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r; }

unmount_under() {
  for mount in $(mounts_under "$1"); do
    umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || true
  done
  if [ -n "$(mounts_under "$1")" ]; then
    die "still mounted under $1 (not removing it): $(mounts_under "$1" | tr '\n' ' ')"
  fi
}

ready() {  # ready SECONDS PIDFILE COMMAND...: until COMMAND succeeds; 1 once the process exits or time is up
  limit=$1 pidfile=$2
  shift 2
  waited=0
  until "$@" >/dev/null 2>&1; do
    kill -0 "$(cat "$pidfile")" 2>/dev/null && [ "$waited" -lt "$limit" ] || return 1
    sleep 1
    waited=$((waited + 1))
  done
}

wait_for() {  # wait_for SECONDS PIDFILE WHAT COMMAND...
  limit=$1 pidfile=$2 what=$3
  shift 3
  ready "$limit" "$pidfile" "$@" && return 0
  kill -0 "$(cat "$pidfile")" 2>/dev/null || die "$what exited; its log: $(tail -n 20 "$dir/$what.log")"
  die "$what is not ready after ${limit}s; its log: $(tail -n 20 "$dir/$what.log")"
}

same_fs() { [ "$(stat -c %d "$1")" = "$(stat -c %d "$2")" ]; }

# The last engine's image store, renamed into DIR (only one engine can); none, or on another file system: empty.
take_images() {
  kept="$cache/images"
  [ -d "$kept" ] && [ ! -L "$kept" ] || return 0
  if ! same_fs "$cache" "$dir"; then
    say "images: $kept is on another file system than $dir; starting with an empty image store"
  elif mv "$kept" "$dir/data" 2>/dev/null; then
    : >"$dir/data.taken"
    say "images: the last engine's image store taken from $kept (its layers are the build's cache)"
  fi
}

launch_dockerd() {
  launch "$dir/dockerd.pid" "$dir/dockerd.log" dockerd --config-file "$dir/daemon.json" \
    --host "unix://$dir/docker.sock" --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/docker.pid" \
    --containerd "$dir/containerd.sock" --bridge=none --iptables=false --ip6tables=false --ip-masq=false \
    --userland-proxy=false --group root
}

start() {
  need_root start
  [ $# -eq 1 ] || die "usage: local-docker.sh start DIR"
  for tool in dockerd containerd runc docker debootstrap; do
    have "$tool" || die "$tool is not installed: run local-docker.sh install"
  done
  mkdir -p "$1"
  dir=$(cd "$1" && pwd)
  [ -z "$(ls -A "$dir")" ] || die "$dir is not empty: start needs a new or empty directory"
  [ "${#dir}" -le 70 ] || die "$dir is too long for the daemons' unix sockets (70 characters at most)"
  : >"$dir/$MARK"
  started=$dir  # from here a failure names the stop that cleans up
  mkdir -p "$dir/containerd"
  cat >"$dir/containerd.toml" <<EOF
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$dir/containerd.sock"
[ttrpc]
  address = "$dir/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/containerd/opt"
EOF
  echo '{}' >"$dir/daemon.json"  # never the machine's /etc/docker/daemon.json
  launch "$dir/containerd.pid" "$dir/containerd.log" containerd --config "$dir/containerd.toml"
  wait_for 30 "$dir/containerd.pid" containerd test -S "$dir/containerd.sock"
  take_images
  launch_dockerd
  export DOCKER_HOST="unix://$dir/docker.sock"
  unset DOCKER_CONTEXT DOCKER_TLS_VERIFY DOCKER_CERT_PATH
  if [ -e "$dir/data.taken" ] && ! ready 60 "$dir/dockerd.pid" docker version; then
    say "images: dockerd does not start on the kept image store; starting again with an empty one"
    stop_pid "$dir/dockerd.pid" "$dir" 30 || true
    unmount_under "$dir/data"
    rm -rf "$dir/data" "$dir/exec" "$dir/data.taken"
    launch_dockerd
  fi
  wait_for 60 "$dir/dockerd.pid" dockerd docker version
  # The socket is as good as root: started through sudo, it is the caller's alone, never a whole group's.
  chmod 600 "$dir/docker.sock"
  if [ -n "${SUDO_UID:-}" ]; then
    chown "$SUDO_UID" "$dir/docker.sock"
  fi
  api=$(docker version --format '{{.Server.APIVersion}}')
  DOCKER_API_VERSION=$api
  export DOCKER_API_VERSION
  say "dockerd $(docker version --format '{{.Server.Version}}') (API $api) on $DOCKER_HOST"
  image=$(base)
  {
    echo "export DOCKER_HOST='$DOCKER_HOST'"
    echo "export DOCKER_API_VERSION='$api'"
    echo "export DOCKER_BUILDKIT=0"
    echo "export TRTMC_VIDEOQA_LOCAL_DOCKER='$dir'"
    echo "export TRTMC_VIDEOQA_BASE_IMAGE='$image'"
  } >"$dir/env"
  cat "$dir/env"
}

launch() {  # launch PIDFILE LOG COMMAND...: in a session of its own, so the caller's Ctrl-C does not reach it
  pidfile=$1 log=$2
  shift 2
  if have setsid; then
    setsid "$@" >"$log" 2>&1 </dev/null &
  else
    "$@" >"$log" 2>&1 </dev/null &
  fi
  echo $! >"$pidfile"
}

# The suite and mirror of this machine's Debian (or Ubuntu) sources, as apt itself reads them.
apt_source() {
  # shellcheck disable=SC1091  # the machine's own
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  arch=$(dpkg --print-architecture)
  # shellcheck disable=SC2016  # apt's own $(FIELD) placeholders
  # Debian's or Ubuntu's own archive only (its Release file's Origin), never a third-party repository of the same
  # codename and component (GitHub's Ubuntu runners list Microsoft's).
  apt-get indextargets --format '$(TARGET_OF) $(REPO_URI) $(RELEASE) $(COMPONENT) $(ARCHITECTURE) $(ORIGIN)' \
    'Created-By: Packages' 2>/dev/null |
    awk -v c="$codename" -v a="$arch" '$1 == "deb" && $4 == "main" && $5 == a && ($6 == "Debian" || $6 == "Ubuntu") &&
      (c == "" ? $3 !~ /[-\/]/ : $3 == c) { sub(/\/$/, "", $2); print $3, $2; exit }'
}

base() {
  need_root base
  suite=${TRTMC_VIDEOQA_BASE_SUITE:-} mirror=${TRTMC_VIDEOQA_BASE_MIRROR:-}
  if [ -z "$suite" ] || [ -z "$mirror" ]; then
    found=$(apt_source)
    [ -n "$found" ] || die "no Debian suite with 'main' in this machine's apt sources (set TRTMC_VIDEOQA_BASE_SUITE and _MIRROR)"
    suite=${suite:-${found%% *}} mirror=${mirror:-${found#* }}
  fi
  arch=$(dpkg --print-architecture)
  key=$(printf '%s\n' 1 "$suite" "$mirror" "$arch" "$VARIANT" "$BASE_PACKAGES" | sha256sum | cut -c1-16)
  image="trtmc-videoqa-base:$suite-$key"
  if docker image inspect "$image" >/dev/null 2>&1; then
    echo "$image"
    return 0
  fi
  mkdir -p "$cache/debs"
  tarball="$cache/base-$suite-$arch-$key.tar"
  if [ -s "$tarball" ]; then
    say "base: $tarball (cached: $suite from $mirror)"
  else
    say "base: debootstrap $suite from $mirror ($VARIANT + $BASE_PACKAGES); cached as $tarball"
    root=$(mktemp -d "$cache/rootfs.XXXXXX")
    # shellcheck disable=SC2064  # the path is fixed now
    trap "unmount_under '$root'; rm -rf '$root'" EXIT
    debootstrap --variant="$VARIANT" --arch="$arch" --cache-dir="$cache/debs" \
      --include="$(echo "$BASE_PACKAGES" | tr ' ' ',')" "$suite" "$root" "$mirror" >&2 ||
      die "debootstrap $suite from $mirror failed; its log ends:" \
        "$(tail -n 15 "$root/debootstrap/debootstrap.log" 2>/dev/null)"
    chroot "$root" python3 -c 'import sys, venv; sys.exit(sys.version_info < (3, 11))' ||
      die "the $suite base has $(chroot "$root" python3 -V 2>&1); the recipes need Python >= 3.11"
    chroot "$root" apt-get clean
    rm -rf "$root/var/lib/apt/lists/"* "$root/tmp/"* "$root/var/log/"*.log
    tar --numeric-owner -C "$root" -cf "$tarball.$$" . && mv "$tarball.$$" "$tarball"
    unmount_under "$root"
    rm -rf "$root"
    trap - EXIT
  fi
  docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' \
    --message "debootstrap --variant=$VARIANT $suite $mirror + $BASE_PACKAGES" "$tarball" "$image" >/dev/null
  say "base: $image imported"
  echo "$image"
}

build() {
  tag=${1:-trtmc-videoqa-cpu}
  [ $# -eq 0 ] || shift
  [ -n "${DOCKER_HOST:-}" ] && [ -n "${TRTMC_VIDEOQA_BASE_IMAGE:-}" ] ||
    die "no engine: run eval \"\$(local-docker.sh start DIR)\" first"
  python=${PYTHON:-python3}
  cert="$here/certs/host-pip-cert.pem"
  [ ! -e "$cert" ] || die "$cert exists already; remove it (build copies pip's CA bundle there itself)"
  # shellcheck disable=SC2064  # the path is fixed now
  trap "rm -f '$cert'" EXIT
  settings=$("$python" "$here/host_index.py" --python "$python" --cert-to "$here/certs")
  for setting in $(echo "$settings" | tr ' ' '\037'); do  # one NAME=value a line; values may hold spaces
    set -- "$@" --build-arg "$(echo "$setting" | tr '\037' ' ')"
  done
  say "docker build FROM $TRTMC_VIDEOQA_BASE_IMAGE, $(echo "$settings" | tr '\n' ' ')"
  cd "$repo"
  DOCKER_BUILDKIT=0 docker build --network host -f containers/cpu.Dockerfile \
    --build-arg "BASE_IMAGE=$TRTMC_VIDEOQA_BASE_IMAGE" "$@" -t "$tag" .
  docker tag "$tag" "$LAST_BUILD"
}

env_value() { sed -n "s/^export $1='\\(.*\\)'\$/\\1/p" "$dir/env"; }  # a value start printed

# Before dockerd stops: every container, and every image but the last build and its base, removed (an older build's
# layers go with it), so the store stop keeps holds one image. 1 when the engine does not answer.
prune_images() {
  [ -S "$dir/docker.sock" ] && [ -s "$dir/env" ] || return 1
  DOCKER_HOST=$(env_value DOCKER_HOST) DOCKER_API_VERSION=$(env_value DOCKER_API_VERSION)
  export DOCKER_HOST DOCKER_API_VERSION
  docker image inspect "$LAST_BUILD" >/dev/null 2>&1 || return 1  # no build: nothing worth keeping
  docker container ls --all --quiet | xargs -r docker container rm --force >/dev/null || return 1
  base=$(env_value TRTMC_VIDEOQA_BASE_IMAGE)
  docker image ls --format '{{.Repository}}:{{.Tag}}' | grep -vxF -e "$LAST_BUILD" -e "$base" -e '<none>:<none>' |
    xargs -r docker image rm >/dev/null || return 1
  docker image prune --force >/dev/null && docker volume prune --force >/dev/null
}

# After both daemons stopped on their own: DIR/data renamed to the cache's images/, unless another engine kept one.
keep_images() {
  mkdir -p "$cache"
  if [ -e "$cache/images" ]; then
    say "images: $cache/images is kept already (another engine's); this one's is removed"
  elif ! same_fs "$cache" "$dir"; then
    say "images: not kept ($cache is on another file system than $dir: it would be a copy)"
  elif mv "$dir/data" "$cache/images"; then
    say "images: the image store (the last build, its base and their layers) kept as $cache/images"
  fi
}

stop() {
  [ $# -eq 1 ] || die "usage: local-docker.sh stop DIR"
  [ -d "$1" ] || return 0
  dir=$(cd "$1" && pwd)
  [ -f "$dir/$MARK" ] || die "$dir was not made by local-docker.sh start; not touching it"
  need_root stop
  keep=no
  if prune_images 2>/dev/null; then
    keep=yes
  fi
  stop_pid "$dir/dockerd.pid" "$dir" 30 || keep=no  # a store dockerd did not close itself is never kept
  stop_pid "$dir/containerd.pid" "$dir" 15 || true
  for proc in /proc/[0-9]*; do  # shims of containers still running name DIR in their command line
    pid=${proc#/proc/}
    case $(cat "$proc/comm" 2>/dev/null) in
      containerd-shim*|runc) ! ours "$pid" "$dir" || kill -KILL "$pid" 2>/dev/null || true ;;
    esac
  done
  unmount_under "$dir"
  if [ "$keep" = yes ] && [ -d "$dir/data" ]; then
    keep_images
  fi
  rm -rf "$dir"
  say "stopped; $dir removed"
}

command=${1:-}
[ $# -eq 0 ] || shift
case $command in
  install) install "$@" ;;
  start) start "$@" ;;
  build) build "$@" ;;
  stop) stop "$@" ;;
  *) sed -n '2,30p' "$0" >&2; exit 2 ;;
esac

#!/bin/sh
# The system packages of an image: containers/packages/IMAGE.txt, or $APT_PACKAGES when it is set
# (APT_PACKAGES=none installs nothing, for a base that already has what the list names).
# usage: system-packages.sh cpu|runtime
set -eu
image=$1
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${APT_PACKAGES:-}" ]; then
  packages=$APT_PACKAGES
else
  packages=$(sed -e 's/#.*//' "$here/packages/$image.txt" | tr -s ' \n' '  ')
fi
packages=$(printf '%s' "$packages" | tr -s ' \t\n' '   ' | sed -e 's/^ //' -e 's/ $//')
if [ -z "$packages" ] || [ "$packages" = none ]; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2086  # one word per package
apt-get install -y --no-install-recommends $packages
rm -rf /var/lib/apt/lists/*

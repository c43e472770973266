#!/bin/sh
# TRTMC at the pin file's commit, for a plain `docker build` (the Dagger module fetches the same commit with
# dag.git(repository).commit(commit).tree()). Kept with its .git, so the audit reads the commit from it.
# usage: fetch-trtmc.sh DEST
set -eu
dest=$1
here=$(cd "$(dirname "$0")" && pwd)
pins=${TRTMC_VIDEOQA_PINS:-$here/pins.toml}
repository=$(python3 "$here/recipe.py" pin "$pins" trtmc.repository)
commit=$(python3 "$here/recipe.py" pin "$pins" trtmc.commit)
mkdir -p "$dest"
git -C "$dest" init -q
git -C "$dest" remote add origin "$repository"
git -C "$dest" fetch -q --depth 1 origin "$commit"
git -C "$dest" checkout -q --detach FETCH_HEAD
test "$(git -C "$dest" rev-parse HEAD)" = "$commit"
echo "TRTMC $repository at $commit in $dest"

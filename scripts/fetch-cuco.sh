#!/usr/bin/env bash
# Puts cuCollections (NVIDIA's header-only GPU hash tables; tandem-bench's
# cuco::static_map hash peer) at third_party/cuco, an ignored folder, at the
# pinned commit below. It is a dependency, not part of the tree: nothing of it
# is committed. CMake finds it there by itself (TANDEM_CUCO_DIR), and
# bench/device-check.sh uses it when it is present, since the GPU machine has
# no network: the folder travels with the tree.
#
# No release of cuCollections is tagged, and no PyPI package ships its
# headers (libcudf-cu13 and libraft-cu13 26.10 were checked: both compile cuco
# in privately), so a commit is pinned. That commit predates CCCL 3 (CUDA 13),
# which removed thrust::identity; bench/cuco_compat.h supplies it.
#
# Usage: scripts/fetch-cuco.sh [SOURCE]
#   SOURCE: a git repository of cuCollections (a URL, or a local clone or
#   mirror; default the GitHub repository). A second run with the pinned
#   commit already checked out returns at once.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
CUCO_COMMIT=dc0f9fc20c2a544e53099e640a681b347532391a # dev, 2024-10-21
SRC=${1:-https://github.com/NVIDIA/cuCollections.git}
DEST=third_party/cuco
if [ -f "$DEST/include/cuco/static_map.cuh" ] && [ "$(cat "$DEST/COMMIT" 2>/dev/null)" = "$CUCO_COMMIT" ]; then
  echo "fetch-cuco: $DEST is at $CUCO_COMMIT already"
  exit 0
fi
rm -rf "$DEST" && mkdir -p "$DEST" || exit 1
# A shallow fetch of the one commit where the server allows it (GitHub
# does), else the whole history (a local mirror).
git -C "$DEST" init -q &&
  { git -C "$DEST" fetch -q --depth 1 "$SRC" "$CUCO_COMMIT" 2>/dev/null || git -C "$DEST" fetch -q "$SRC"; } &&
  git -C "$DEST" -c advice.detachedHead=false checkout -q "$CUCO_COMMIT" || {
  echo "fetch-cuco: could not get commit $CUCO_COMMIT from $SRC" >&2
  rm -rf "$DEST"
  exit 1
}
# Without its .git the folder is plain files (5 MB): it travels with the tree
# like any other ignored folder, and COMMIT says what it is.
rm -rf "$DEST/.git" && echo "$CUCO_COMMIT" >"$DEST/COMMIT"
echo "fetch-cuco: $DEST at $CUCO_COMMIT (headers in $DEST/include)"

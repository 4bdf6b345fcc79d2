#!/bin/sh
# Regenerates nccl-abi.txt next to this script: the struct sizes, field offsets and constants that
# ../c/abi_dump.c prints when compiled against NVIDIA's net-plugin headers of each NCCL release named, one column per
# release. Only those numbers are kept: NVIDIA's headers are read from a temporary folder and never copied here.
#   usage: nccl-shim/src/test/abi/regenerate.sh NCCL_GIT [TAG...]
#     NCCL_GIT: a checkout of https://github.com/NVIDIA/nccl, or its git directory (it needs the release tags)
#     TAG: release tags, oldest first (default: v2.28.9-1 v2.30.7-1, the releases NcclAbiCheckTest is held to)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
MAIN_C=$HERE/../../main/c
[ $# -ge 1 ] || { sed -n '5,7p' "$0" >&2; exit 2; }
SRC=$1
shift
[ $# -gt 0 ] || set -- v2.28.9-1 v2.30.7-1
if [ -d "$SRC/.git" ]; then GIT_DIR=$SRC/.git; else GIT_DIR=$SRC; fi
git --git-dir="$GIT_DIR" rev-parse -q --git-dir >/dev/null 2>&1 \
    || { echo "regenerate.sh: $SRC is not a git checkout of NVIDIA/nccl (git clone https://github.com/NVIDIA/nccl)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

sources=""
for tag in "$@"; do
    commit=$(git --git-dir="$GIT_DIR" rev-parse -q --verify "$tag^{commit}") \
        || { echo "regenerate.sh: no tag $tag in $SRC (git fetch --tags)" >&2; exit 1; }
    # the headers moved from ext-net/ to plugins/net/ in NCCL 2.29
    dir=""
    for d in plugins/net/example/nccl ext-net/example/nccl; do
        if [ -n "$(git --git-dir="$GIT_DIR" ls-tree --name-only "$commit" "$d/net.h")" ]; then dir=$d; break; fi
    done
    [ -n "$dir" ] || { echo "regenerate.sh: $tag has no net-plugin headers (plugins/net or ext-net)" >&2; exit 1; }
    mkdir -p "$TMP/$tag"
    git --git-dir="$GIT_DIR" archive "$commit" "$dir" | tar -x -C "$TMP/$tag"
    gcc -std=gnu11 -Wall -Werror -DJMESH_USE_NCCL_HEADERS -I"$TMP/$tag/$dir" -I"$MAIN_C" \
        -o "$TMP/$tag/abi_dump" "$HERE/../c/abi_dump.c"
    "$TMP/$tag/abi_dump" > "$TMP/$tag.txt"
    sources="$sources# $tag = commit $commit ($dir)
"
done

{
    cat <<EOF
# The NCCL net-plugin ABI as NVIDIA's headers declare it: what nccl-shim/src/test/c/abi_dump.c prints when compiled
# against each release's net-plugin headers. Facts only (sizes, offsets, constants), no NVIDIA code.
# NcclAbiCheckTest compiles abi_dump against jmesh's nccl_net_abi.h in every build and requires the same value in
# every column; "-" means the release has no such item (NCCL before 2.30 has no v12 API).
# Regenerate (with a checkout of https://github.com/NVIDIA/nccl):
#   nccl-shim/src/test/abi/regenerate.sh /path/to/nccl $*
EOF
    printf '%s' "$sources"
    # one row per item, in the order abi_dump prints them (the newest release prints every item)
    awk -v tags="$*" '
        BEGIN { n = split(tags, t, " ") }
        { col = 0; for (i = 1; i <= n; i++) if (FILENAME ~ ("/" t[i] "\\.txt$")) col = i
          if (!($1 in seen)) { seen[$1] = 1; order[++rows] = $1 }
          v[$1, col] = $2 }
        END {
            line = sprintf("%-56s", "item"); for (i = 1; i <= n; i++) line = line sprintf(" %-10s", t[i])
            sub(/ +$/, "", line); print line
            for (r = 1; r <= rows; r++) {
                line = sprintf("%-56s", order[r])
                for (i = 1; i <= n; i++) line = line sprintf(" %-10s", ((order[r], i) in v) ? v[order[r], i] : "-")
                sub(/ +$/, "", line); print line
            }
        }' $(for tag in "$@"; do echo "$TMP/$tag.txt"; done)
} > "$HERE/nccl-abi.txt.tmp"
mv "$HERE/nccl-abi.txt.tmp" "$HERE/nccl-abi.txt"
echo "wrote $HERE/nccl-abi.txt ($(grep -vc '^#' "$HERE/nccl-abi.txt") lines, releases: $*)"

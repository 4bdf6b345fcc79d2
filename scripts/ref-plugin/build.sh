#!/usr/bin/env bash
# Builds the reference plugin (github.com/autoscriptlabs/nccl-mesh-plugin, the C plugin jmesh started from: SEND/RECV
# on one RC queue pair per connection) with real verbs, as a baseline for nccl-net-driver (scripts/bench plugin
# --ref). Its source is not part of jmesh: pass a checkout of it (measured at commit 679a394). Two changes, both needed
# to run it on Soft-RoCE and neither touching its data path: its stub infiniband/verbs.h is left out so that the
# system's libibverbs headers are used, and softroce-netdev.patch finds an rxe device's netdev in its "parent" file
# (the plugin looks only under device/net/, which a PCI NIC has and rxe has not).
#   scripts/ref-plugin/build.sh CHECKOUT OUT_DIR     -> OUT_DIR/libnccl-net-mesh.so (needs gcc and libibverbs-dev)
set -euo pipefail
HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
src=${1:?usage: build.sh CHECKOUT_OF_nccl-mesh-plugin OUT_DIR}
out=${2:?usage: build.sh CHECKOUT_OF_nccl-mesh-plugin OUT_DIR}
fail() { echo "build.sh: $*" >&2; exit 1; }
[ -f "$src/src/mesh_plugin.c" ] || fail "$src/src/mesh_plugin.c not found: pass a checkout of nccl-mesh-plugin"
[ -f /usr/include/infiniband/verbs.h ] || fail "no /usr/include/infiniband/verbs.h: apt-get install libibverbs-dev"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/src" "$src/include" "$work/"
[ -d "$src/nccl" ] && cp -r "$src/nccl" "$work/"
rm -rf "$work/include/infiniband"
(cd "$work" && patch -s -p1 < "$HERE/softroce-netdev.patch")
mkdir -p "$out"
gcc -O2 -fPIC -g -I"$work" -I"$work/include" -shared -o "$out/libnccl-net-mesh.so" \
    "$work/src/mesh_plugin.c" "$work/src/mesh_routing.c" -libverbs -lpthread
echo "build.sh: $out/libnccl-net-mesh.so"

#!/usr/bin/env bash
# Builds a small Java runtime (jlink) for the NCCL plugin, puts it into the install layout as jre/ and records it in
# the layout's java-home, so that the library starts it when JMESH_JAVA_HOME and JAVA_HOME are unset: for machines
# without Java (GPU nodes).
#   usage: scripts/nccl-runtime.sh [PLUGIN_DIR]   (default nccl-shim/target/nccl-plugin; build that first)
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
. "$ROOT/scripts/lib.sh"
jmesh_find_jdk
PLUGIN_DIR=${1:-$ROOT/nccl-shim/target/nccl-plugin}
[ -d "$PLUGIN_DIR/lib" ] || jmesh_die "no install layout at $PLUGIN_DIR: run 'mvn package -pl nccl-shim -am' first"
jmesh_jlink_runtime "" "$PLUGIN_DIR/jre" || jmesh_die "jlink failed"
echo jre > "$PLUGIN_DIR/java-home" # relative to the library: the layout may be copied anywhere
echo "runtime: $PLUGIN_DIR/jre ($(du -sh "$PLUGIN_DIR/jre" | cut -f1)); layout $(du -sh "$PLUGIN_DIR" | cut -f1)"
# a new runtime needs its own AOT cache: the old one fits only the runtime that wrote it
"$ROOT/scripts/nccl-aot.sh" "$PLUGIN_DIR"

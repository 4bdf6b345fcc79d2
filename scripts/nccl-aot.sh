#!/usr/bin/env bash
# Builds the AOT cache of an NCCL plugin install layout, lib/jmesh.aot (JDK 25's ahead-of-time class loading and
# linking, JEP 483/514/515): a training run of the plugin as NCCL uses it (two ranks of nccl-net-driver over the TCP
# provider on loopback: init, listen, connect/accept, registrations, grouped isend/irecv/test, close, finalize) in the
# layout's own runtime, whose JVM is then destroyed so that it writes the cache. The library uses it whenever it starts
# that runtime; the JVM starts in about half the time (docs/benchmarks.md, "Start-up"). Maven runs this when it builds
# the layout, and scripts/nccl-runtime.sh after replacing the runtime: a cache fits only the runtime and jars it was
# built with.
#   usage: scripts/nccl-aot.sh [--if-possible] [PLUGIN_DIR]   (default nccl-shim/target/nccl-plugin)
#   --if-possible: a training run that fails is a warning, not an error (the Maven build: the layout works without)
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
optional=0
[ "${1:-}" = "--if-possible" ] && { optional=1; shift; }
die() { echo "nccl-aot: $*" >&2; exit 2; }
PLUGIN_DIR=$(cd "${1:-$ROOT/nccl-shim/target/nccl-plugin}" 2>/dev/null && pwd) \
    || die "no folder ${1:-}: give the install layout (nccl-shim/target/nccl-plugin)"
[ -x "$PLUGIN_DIR/bin/nccl-net-driver" ] && [ -f "$PLUGIN_DIR/java-home" ] \
    || die "no install layout at $PLUGIN_DIR: run 'mvn package -pl nccl-shim -am' first"
home=$(head -1 "$PLUGIN_DIR/java-home")
case "$home" in /*) ;; *) home=$PLUGIN_DIR/$home ;; esac
[ -x "$home/bin/java" ] || die "the layout's runtime $home has no bin/java, which the JVM needs to write the cache"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=$PLUGIN_DIR/lib/jmesh.aot
rm -f "$cache" "$cache.tmp"
# the layout's runtime, whatever JAVA_HOME says: the cache fits only the runtime that wrote it. AOTAdapterCaching off:
# JDK 25's adapter blobs do not always link back (a warning at every start), the classes are what saves the time.
run_rank() {
    JMESH_JAVA_HOME=$home JMESH_PROVIDER=tcp JMESH_ADDRESSES=127.0.0.1/8 JMESH_JVM_OPTS="$2" \
        "$PLUGIN_DIR/bin/nccl-net-driver" --plugin "$PLUGIN_DIR/libnccl-net-jmesh.so" --rank "$1" --nranks 2 \
        --dir "$work" --min 0 --max 1M --iters 16 --window 8 --group 2 --timeout 120 --destroy-jvm \
        > "$work/rank$1.log" 2>&1
}
run_rank 0 "-XX:AOTCacheOutput=$cache.tmp -XX:+UnlockDiagnosticVMOptions -XX:-AOTAdapterCaching" &
r0=$!
run_rank 1 "" &
r1=$!
ok=1
wait $r0 || ok=0
wait $r1 || ok=0
if [ $ok -eq 0 ] || [ ! -s "$cache.tmp" ]; then
    tail -n 20 "$work"/rank*.log >&2
    rm -f "$cache.tmp"
    why="the training run failed (above); the layout works without a cache, only its JVM starts slower"
    [ $optional -eq 1 ] && { echo "nccl-aot: warning: $why" >&2; exit 0; }
    die "$why"
fi
mv "$cache.tmp" "$cache"
echo "AOT cache: $cache ($(du -h "$cache" | cut -f1)) for the runtime $home"

#!/usr/bin/env bash
# Builds, on this x86_64 machine, the NCCL plugin's install layout for aarch64 nodes (DGX Spark):
#   OUT/libnccl-net-jmesh.so, OUT/bin/nccl-net-driver   cross-compiled for aarch64 (gcc-aarch64-linux-gnu)
#   OUT/lib/*.jar                                       the same jars as the x86_64 layout (Java is Java)
#   OUT/jre/, OUT/java-home                             a jlink'd aarch64 Java runtime: this JDK's jlink over the jmods of
#                                                       Debian's arm64 openjdk-25-jdk-headless (same feature release)
# No AOT cache: it can only be trained on aarch64 (scripts/nccl-aot.sh OUT there); the plugin starts without it.
#   usage: scripts/nccl-layout-arm64.sh [OUT]   (default nccl-shim/target/nccl-plugin-arm64; needs the x86_64 layout,
#          mvn package -pl nccl-shim -am, for its jars). Installs gcc-aarch64-linux-gnu and libc6-dev-arm64-cross when missing (root).
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
. "$ROOT/scripts/lib.sh"
jmesh_find_jdk
SRC=$ROOT/nccl-shim/target/nccl-plugin
OUT=${1:-$ROOT/nccl-shim/target/nccl-plugin-arm64}
say() { echo "nccl-layout-arm64: $*" >&2; }
[ -d "$SRC/lib" ] || jmesh_die "no x86_64 layout at $SRC for the jars: run 'mvn package -pl nccl-shim -am' first"
jmesh_apt gcc-aarch64-linux-gnu libc6-dev-arm64-cross
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 \
    || jmesh_die "no aarch64-linux-gnu-gcc: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross (as root)"

# Debian's arm64 JDK 25, for its jmods (about 320 MB, fetched once)
. "$ROOT/testbed/lib/arm64-apt"
JDK=$A64/jdk/usr/lib/jvm/java-25-openjdk-arm64
if [ ! -d "$JDK/jmods" ]; then
    arm64_apt_ready || jmesh_die "apt-get update for arm64 failed (no network to deb.debian.org?)"
    say "fetching Debian's arm64 openjdk-25-jdk-headless (its jmods)"
    dl=$A64/download-jdk; rm -rf "$dl" "$A64/jdk"; mkdir -p "$dl"
    (cd "$dl" && timeout 900 apt-get "${APTO[@]}" download openjdk-25-jdk-headless >&2) \
        || jmesh_die "apt-get download openjdk-25-jdk-headless (arm64) failed"
    dpkg -x "$dl"/openjdk-25-jdk-headless_*.deb "$A64/jdk"
    rm -rf "$dl"
    [ -d "$JDK/jmods" ] || jmesh_die "no jmods in Debian's arm64 openjdk-25-jdk-headless"
fi

mkdir -p "$OUT/lib"
rm -f "$OUT"/lib/*.jar "$OUT/lib/jmesh.aot"
cp -p "$SRC"/lib/*.jar "$OUT/lib/"
say "cross-compiling the library and the driver for aarch64"
# build.sh rebuilds what is older than its sources; jni.h and jni_md.h are the same on aarch64 Linux
CC=aarch64-linux-gnu-gcc sh "$ROOT/nccl-shim/src/main/c/build.sh" "$OUT" "$JAVA_HOME"
say "linking the aarch64 runtime"
jmesh_jlink_runtime "$JDK/jmods" "$OUT/jre" aarch64-linux-gnu-strip || jmesh_die "jlink of the aarch64 runtime failed"
echo jre > "$OUT/java-home"
for f in "$OUT/libnccl-net-jmesh.so" "$OUT/bin/nccl-net-driver" "$OUT/jre/lib/server/libjvm.so"; do
    # e_machine at byte 18 of the ELF header: 0xb7 is aarch64
    [ "$(od -An -tx1 -j18 -N1 "$f" | tr -d ' ')" = b7 ] || jmesh_die "$f is not an aarch64 ELF file"
done
say "$OUT: aarch64 library, driver and runtime ($(du -sh "$OUT/jre" | cut -f1)); layout $(du -sh "$OUT" | cut -f1)"

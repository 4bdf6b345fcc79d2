#!/bin/sh
# Builds libnccl-net-jmesh.so (net plugin, CollNet and tuner) and nccl-net-driver into the install layout; Maven runs it at compile time
# (nccl-shim/pom.xml, exec-maven-plugin), so that only gcc is needed (./test installs gcc and libc6-dev):
#   sh nccl-shim/src/main/c/build.sh OUT JAVA_HOME
# JAVA_HOME is needed only for jni.h: the library dlopens libjvm.so at run time (docs/nccl.md). Rebuilds only what
# is older than its sources.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1
JAVA_HOME=$2
CC=${CC:-gcc}
CFLAGS=${CFLAGS:--O2 -g}
WARN="-Wall -Wextra -Werror -Wno-unused-parameter -Wno-format-truncation"
command -v "$CC" >/dev/null 2>&1 || { echo "nccl-shim: no C compiler '$CC': install gcc (apt-get install gcc libc6-dev)" >&2; exit 1; }
[ -f "$JAVA_HOME/include/jni.h" ] || { echo "nccl-shim: no $JAVA_HOME/include/jni.h: build with a JDK 25 (not a JRE)" >&2; exit 1; }
mkdir -p "$OUT/bin"

stale() { # target, sources...: true when the target is missing or older than a source
    t=$1; shift
    [ -f "$t" ] || return 0
    for s in "$@"; do [ "$s" -nt "$t" ] && return 0; done
    return 1
}

LIB=$OUT/libnccl-net-jmesh.so
if stale "$LIB" "$HERE/net.c" "$HERE/collnet.c" "$HERE/tuner.c" "$HERE/jvm.c" "$HERE/jmesh_shim.h" \
        "$HERE/nccl_net_abi.h" "$HERE/nccl_collnet_abi.h" "$HERE/nccl_tuner_abi.h" "$0"; then
    # shellcheck disable=SC2086
    "$CC" -std=gnu11 $CFLAGS $WARN -fPIC -fvisibility=hidden -I"$HERE" -I"$JAVA_HOME/include" \
        -I"$JAVA_HOME/include/linux" -shared -Wl,-z,defs -Wl,-soname,libnccl-net-jmesh.so -o "$LIB.tmp" \
        "$HERE/net.c" "$HERE/collnet.c" "$HERE/tuner.c" "$HERE/jvm.c" -ldl -lpthread
    mv "$LIB.tmp" "$LIB"
fi

# NCCL 2.28 and 2.29 forget the plugin's name when a process's last communicator ends (abort or destroy) and look for
# libnccl-net.so when the next one starts: without this name a restart in the same process finds no plugin
# (docs/nccl.md, restarting after a failure)
ln -sfn libnccl-net-jmesh.so "$OUT/libnccl-net.so"

DRIVER=$OUT/bin/nccl-net-driver
DRIVER_DIR=$HERE/../../driver/c
if stale "$DRIVER" "$DRIVER_DIR/nccl_net_driver.c" "$DRIVER_DIR/driver_plugin.c" "$DRIVER_DIR/driver_calls.c" \
        "$DRIVER_DIR/driver_settle.c" "$DRIVER_DIR/driver_util.c" "$DRIVER_DIR/driver_coll.c" \
        "$DRIVER_DIR/driver_tuner.c" "$DRIVER_DIR/driver.h" "$HERE/nccl_net_abi.h" "$HERE/nccl_collnet_abi.h" \
        "$HERE/nccl_tuner_abi.h" "$0"; then
    # shellcheck disable=SC2086
    "$CC" -std=gnu11 $CFLAGS $WARN -I"$HERE" -o "$DRIVER.tmp" "$DRIVER_DIR/nccl_net_driver.c" \
        "$DRIVER_DIR/driver_plugin.c" "$DRIVER_DIR/driver_calls.c" "$DRIVER_DIR/driver_settle.c" \
        "$DRIVER_DIR/driver_util.c" "$DRIVER_DIR/driver_coll.c" "$DRIVER_DIR/driver_tuner.c" -ldl
    mv "$DRIVER.tmp" "$DRIVER"
fi

# The Java runtime the library starts when JMESH_JAVA_HOME and JAVA_HOME are unset: this build's JDK, or the runtime
# that scripts/nccl-runtime.sh bundled (a path relative to the library).
if [ -d "$OUT/jre" ]; then echo jre; else echo "$JAVA_HOME"; fi > "$OUT/java-home.tmp"
if cmp -s "$OUT/java-home.tmp" "$OUT/java-home"; then rm -f "$OUT/java-home.tmp"; else mv "$OUT/java-home.tmp" "$OUT/java-home"; fi

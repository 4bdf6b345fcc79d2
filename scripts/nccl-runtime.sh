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
rm -rf "$PLUGIN_DIR/jre"
# java.desktop: Log4j Core's LoggerContext needs java.beans; its AWT/font/image/sound libraries are left out.
"$JAVA_HOME/bin/jlink" --add-modules java.base,java.desktop,java.logging,java.management,java.naming,java.xml,jdk.unsupported \
    --strip-debug --no-man-pages --no-header-files --compress=zip-9 \
    "--exclude-files=**/libawt*.so,**/libfontmanager.so,**/libjavajpeg.so,**/liblcms.so,**/libmlib_image.so,**/libsplashscreen.so,**/libjsound.so,**/libfreetype.so,**/libharfbuzz.so" \
    --output "$PLUGIN_DIR/jre"
# jlink keeps the native symbol tables; without them libjvm.so is 5 MB smaller
if command -v strip >/dev/null 2>&1; then
    find "$PLUGIN_DIR/jre" -name '*.so' -exec strip --strip-unneeded {} \;
fi
echo jre > "$PLUGIN_DIR/java-home" # relative to the library: the layout may be copied anywhere
echo "runtime: $PLUGIN_DIR/jre ($(du -sh "$PLUGIN_DIR/jre" | cut -f1)); layout $(du -sh "$PLUGIN_DIR" | cut -f1)"
# a new runtime needs its own AOT cache: the old one fits only the runtime that wrote it
"$ROOT/scripts/nccl-aot.sh" "$PLUGIN_DIR"

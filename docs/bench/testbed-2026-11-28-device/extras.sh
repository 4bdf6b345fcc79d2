#!/usr/bin/env bash
# Here, on the build machine: what call.sh needs on the device machine beside the testbed pack, packed into
# target/device-extras.tar.xz (paths relative to the tree's root, so the device unpacks it where it runs):
#   nccl-shim/target/nccl-plugin   the plugin's layout without a runtime and without its AOT cache (54 and 24 MB:
#                                  past 64 MiB beside the pack): call.sh points java-home at the pack's runtime and
#                                  builds the cache for it there (scripts/nccl-aot.sh)
#   target/ref/libnccl-net-mesh.so the reference C plugin (scripts/ref-plugin/build.sh; the device has no verbs headers)
#   target/tests/                  transport's test classes and the jars of their class path, and JUnit's console
#                                  launcher, for scripts/bench allpairs
# Run after `mvn -o package -DskipTests` and testbed/device-pack:
#   bash docs/bench/testbed-2026-11-28-device/extras.sh CHECKOUT_OF_nccl-mesh-plugin   (measured at 679a394)
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../../.." && pwd)
REF=${1:?usage: extras.sh CHECKOUT_OF_nccl-mesh-plugin}
cd "$ROOT"
L=nccl-shim/target/nccl-plugin
launcher=${HOME:-/root}/.m2/repository/org/junit/platform/junit-platform-console-standalone/1.13.4/junit-platform-console-standalone-1.13.4.jar
[[ -x $L/bin/nccl-net-driver && -d transport/target/test-classes && -f $launcher ]] \
  || { echo "extras.sh: build first (mvn -o package -DskipTests; the JUnit launcher from ./test's first run)" >&2; exit 1; }
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
mkdir -p "$w/$L/lib" "$w/target/tests/lib"
# -a: the jars keep their times, which the AOT cache built there records
cp -a "$L/bin" "$L/libnccl-net-jmesh.so" "$w/$L/"
cp -a "$L"/lib/*.jar "$w/$L/lib/"
scripts/ref-plugin/build.sh "$REF" "$w/target/ref"
cp -a transport/target/test-classes "$w/target/tests/"
cp transport/target/jmesh-transport-*.jar "$launcher" "$w/target/tests/lib/"
tr ':' '\n' < transport/target/test-classpath.txt | grep '\.jar$' | while read -r j; do cp "$j" "$w/target/tests/lib/"; done
tar -C "$w" -cf - . | xz -6 -T1 > target/device-extras.tar.xz
echo "extras.sh: target/device-extras.tar.xz ($(du -h target/device-extras.tar.xz | cut -f1))"

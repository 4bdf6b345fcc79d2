#!/usr/bin/env bash
# The NCCL plugin over real verbs (Soft-RoCE) in the testbed: nccl-net-driver drives libnccl-net-jmesh.so with
# JMESH_PROVIDER=rdma in every guest of `pair` and `triangle` (and line:N, ring:N, where ranks without a link connect
# through a relay node), each guest one rank connected to all others; every byte is verified, test() sizes checked,
# and in triangle each rank's connect through NCCL's dev 0 to the peer that dev 0 has no link to must be overridden
# by the mesh (the log says so).
#   usage: scripts/nccl-testbed.sh [--arch arm64] [TOPOLOGY...]     (default: pair triangle; needs the built layout)
# --arch arm64: arm64 guests drive the aarch64 layout (scripts/nccl-layout-arm64.sh): the aarch64 driver, library and
# bundled runtime, on an aarch64 kernel's verbs.
# Last line: "nccl: N passed, N failed, N skipped" (one check per topology and guest).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
ARCH=()
if [ "${1:-}" = "--arch" ]; then
    case ${2:-} in arm64|aarch64) ARCH=(--arch arm64) ;; x86_64|amd64) ;; *) echo "nccl-testbed: --arch arm64 or x86_64" >&2; exit 2 ;; esac
    shift 2
fi
if [ ${#ARCH[@]} -gt 0 ]; then
    PLUGIN_DIR=${PLUGIN_DIR:-$ROOT/nccl-shim/target/nccl-plugin-arm64}
else
    PLUGIN_DIR=${PLUGIN_DIR:-$ROOT/nccl-shim/target/nccl-plugin}
fi

if [ "${1:-}" = "--guest" ]; then # inside one guest
    read -r -a guests <<< "$TESTBED_GUESTS"
    rank=0
    for i in "${!guests[@]}"; do [ "${guests[$i]}" = "$TESTBED_NAME" ] && rank=$i; done
    mkdir -p "$TESTBED_SHARED/nccl"
    log=$TESTBED_OUT/nccl-driver.log
    # a handshake through a relay whose JVM has just started took over the default 10 s on a loaded TCG host
    # JAVA_HOME unset: the library starts the layout's own runtime with its AOT cache, as on a GPU node without Java
    env -u JAVA_HOME JMESH_HANDSHAKE_TIMEOUT_MS=${JMESH_HANDSHAKE_TIMEOUT_MS:-30000} \
    JMESH_PROVIDER=rdma NCCL_DEBUG=INFO JMESH_JVM_OPTS="-XX:TieredStopAtLevel=1 ${JMESH_JVM_OPTS:-}" \
        "$PLUGIN_DIR/bin/nccl-net-driver" --plugin "$PLUGIN_DIR/libnccl-net-jmesh.so" --rank "$rank" \
        --nranks "${#guests[@]}" --dir "$TESTBED_SHARED/nccl" --min 4K --max 256K --iters 16 --window 4 --group 2 \
        --log-level 3 --timeout 240 > "$log" 2>&1
    rc=$?
    grep -E 'driver: rank|FAIL|overriding|through a relay node|AOT cache' "$log"
    if [ $rc -eq 0 ] && [ "$TESTBED_TOPOLOGY" = triangle ] && ! grep -q "cannot reach the peer" "$log"; then
        echo "nccl-testbed: $TESTBED_NAME: no connect was overridden by the mesh in triangle"
        rc=1
    fi
    # the ends of a line and every node of a ring have a peer without a link: that connect went through a relay
    last=$(( ${#guests[@]} - 1 ))
    if [ $rc -eq 0 ] && { [[ $TESTBED_TOPOLOGY == ring:* ]] || { [[ $TESTBED_TOPOLOGY == line:* ]] \
            && { [ "$rank" -eq 0 ] || [ "$rank" -eq "$last" ]; }; }; } && ! grep -q "through a relay node" "$log"; then
        echo "nccl-testbed: $TESTBED_NAME: no connect went through a relay node in $TESTBED_TOPOLOGY"
        rc=1
    fi
    [ $rc -eq 0 ] && echo ok > "$TESTBED_OUT/nccl-ok" || tail -30 "$log"
    testbed-barrier done 300 >/dev/null 2>&1 || true
    exit $rc
fi

topos=("$@")
[ ${#topos[@]} -gt 0 ] || topos=(pair triangle)
passed=0 failed=0 skipped=0
if [ ! -x "$PLUGIN_DIR/bin/nccl-net-driver" ]; then
    echo "nccl-testbed: no plugin layout at $PLUGIN_DIR (mvn package -pl nccl-shim -am; for arm64 then scripts/nccl-layout-arm64.sh)"
    echo "nccl: 0 passed, 1 failed, 0 skipped"
    exit 1
fi
for topo in "${topos[@]}"; do
    case $topo in triangle) n=3 ;; line:*|ring:*|mesh:*) n=${topo#*:} ;; *) n=2 ;; esac
    runfile=$(mktemp)
    # a run folder of our own under target/ (target/testbed may be a symlink, which the guests cannot follow)
    out=$ROOT/target/nccl-testbed/$(date +%Y%m%d-%H%M%S)-${topo/:/}${ARCH[1]:+-${ARCH[1]}}
    mkdir -p "$(dirname "$out")"
    "$ROOT/testbed/run" "${ARCH[@]}" -e PLUGIN_DIR="$PLUGIN_DIR" --retry-infra --grace 60 -t 420 --out "$out" \
        --run-dir-file "$runfile" "$topo" -- \
        bash "$ROOT/scripts/nccl-testbed.sh" --guest
    rc=$?
    run=$(cat "$runfile" 2>/dev/null); rm -f "$runfile"
    if [ $rc -eq 95 ]; then skipped=$((skipped + n)); continue; fi
    ok=0
    [ -n "$run" ] && ok=$(ls "$run"/*/out/nccl-ok 2>/dev/null | wc -l)
    [ $rc -ne 0 ] && [ "$ok" -ge "$n" ] && ok=$((n - 1)) # the run failed outside the guests' checks
    passed=$((passed + ok)); failed=$((failed + n - ok))
    echo "nccl-testbed: $topo: exit $rc, $ok/$n guests passed"
done
echo "nccl: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# The TCP provider against parallel iperf3 on this machine's loopback (no testbed)
#
# The TCP provider against iperf3 on this machine's loopback, in one run: `jmesh bw -q N` (N connections, one
# process pair) against N parallel iperf3 client/server process pairs, for N in COUNTS, at SIZES; then the NCCL driver
# (two processes, jmesh's TCP provider) at 1-4 MiB. Run it where the cores are (a 2-core machine cannot show parallel
# scaling). Each jmesh line is repeated with every helper-thread count in THREADS (JMESH_TCP_THREADS; 0: the
# application's thread moves the bytes, as before the helpers), REPS times, interleaved. SOCKETS sets jmesh's data
# sockets per connection (JMESH_TCP_SOCKETS; socket 0 carries control and small messages, the others the bulk);
# SKIP="iperf driver" leaves those parts out.
#   usage: scripts/bench tcp-scaling            (results in OUT, default target/tcp-scaling)
# Needs: a Java 25 runtime (JAVA_HOME, else the plugin layout's jre), the built jars (benchmarks/target, and
# nccl-shim/target/nccl-plugin for the driver), and iperf3 on PATH (or IPERF3, with IPERF3_LIB for its libraries).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
OUT=${OUT:-$ROOT/target/tcp-scaling}
COUNTS=${COUNTS:-1 2 4 8}
THREADS=${THREADS:-0 4}
SIZES=${SIZES:-1M,4M}
SECONDS_PER=${SECONDS_PER:-4}
REPS=${REPS:-1}
SOCKETS=${SOCKETS:-4}
SKIP=${SKIP:-}
POLL=${POLL:-yield}              # what jmesh's threads do when a poll finds nothing (NCCL's proxy thread yields)
PLUGIN_DIR=${PLUGIN_DIR:-$ROOT/nccl-shim/target/nccl-plugin}
JAVA_HOME=${JAVA_HOME:-$PLUGIN_DIR/jre}
IPERF3=${IPERF3:-$(command -v iperf3 || true)}
mkdir -p "$OUT"
[ -x "$JAVA_HOME/bin/java" ] || { echo "no Java runtime at $JAVA_HOME (set JAVA_HOME)"; exit 2; }
[ -f "$ROOT/benchmarks/target/jmesh-benchmarks.jar" ] || { echo "no benchmarks jar (mvn package -DskipTests)"; exit 2; }
[ -n "$IPERF3" ] || { echo "no iperf3 (set IPERF3)"; exit 2; }
echo "machine: $(nproc) CPUs, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "java: $("$JAVA_HOME/bin/java" -version 2>&1 | head -1); iperf3: $(LD_LIBRARY_PATH=${IPERF3_LIB:-} "$IPERF3" --version | head -1)"

jmesh() {
    "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED --add-exports java.base/sun.nio.ch=ALL-UNNAMED -Xss1m \
        ${JMESH_JAVA_OPTS:-} \
        -cp "$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*" io.jmesh.cli.Jmesh "$@"
}

# one jmesh bw run: connections, helper threads, repetition; prints "jmesh N threads size MB/s sockets" per size
jmesh_bw() {
    local n=$1 t=$2 port=$((18515 + RANDOM % 2000)) log=$OUT/jmesh-q$1-t$2-s$SOCKETS-r$3
    export JMESH_TCP_SOCKETS=$SOCKETS
    JMESH_TCP_THREADS=$t jmesh bw --provider tcp --addresses 127.0.77.1/24 -p $port --settle 3 --poll "$POLL" \
        > "$log.server" 2>&1 &
    local server=$!
    sleep 1.5
    JMESH_TCP_THREADS=$t jmesh bw --provider tcp --addresses 127.0.77.2/24 -p $port -q "$n" -s "$SIZES" \
        -D "$SECONDS_PER" --settle 3 --poll "$POLL" 127.0.77.1 > "$log.client" 2>&1
    local rc=$?
    wait $server
    [ $rc -eq 0 ] || { echo "jmesh bw -q $n threads $t FAILED (exit $rc):"; tail -5 "$log.client"; return 1; }
    # the result lines: bytes, iterations, peak MB/s, average MB/s, msg rate
    awk -v n="$n" -v t="$t" -v s="$SOCKETS" '$1 ~ /^[0-9]+$/ && NF >= 5 {
        printf "jmesh\t%s\t%s\t%s\t%.0f\t%s\n", n, t, $1, $4, s }' "$log.client"
}

# N iperf3 pairs at once, one stream each, for SECONDS_PER s; prints their summed receive rate in MB/s
iperf_pairs() {
    local n=$1 i pids=() r=$2
    for i in $(seq 1 "$n"); do
        LD_LIBRARY_PATH=${IPERF3_LIB:-} "$IPERF3" -s -1 -p $((5200 + i)) > /dev/null 2>&1 &
    done
    sleep 1
    for i in $(seq 1 "$n"); do
        LD_LIBRARY_PATH=${IPERF3_LIB:-} "$IPERF3" -c 127.0.0.1 -p $((5200 + i)) -t "$SECONDS_PER" -J \
            > "$OUT/iperf-n$n-$i-r$r.json" 2>&1 &
        pids+=($!)
    done
    wait "${pids[@]}"
    sleep 0.5
    local sum=0 bps
    for i in $(seq 1 "$n"); do
        bps=$(grep -A8 '"sum_received"' "$OUT/iperf-n$n-$i-r$r.json" | grep -m1 '"bits_per_second"' \
            | sed 's/.*:[[:space:]]*\([0-9.e+]*\).*/\1/')
        sum=$(awk -v a="$sum" -v b="${bps:-0}" 'BEGIN { print a + b }')
    done
    awk -v n="$n" -v s="$sum" 'BEGIN { printf "iperf3\t%s\t-\t-\t%.0f\t-\n", n, s / 8 / 1048576 }'
}

status=0
rm -f "$OUT/FAILED"
{
    printf "what\tN\tthreads\tbytes\tMB/s\tsockets\n"
    for r in $(seq 1 "$REPS"); do
        for n in $COUNTS; do
            case " $SKIP " in *" iperf "*) ;; *) iperf_pairs "$n" "$r" ;; esac
            for t in $THREADS; do
                jmesh_bw "$n" "$t" "$r" || touch "$OUT/FAILED"
            done
        done
    done
} | tee -a "$OUT/scaling.tsv"
[ -f "$OUT/FAILED" ] && status=1

case " $SKIP " in *" driver "*) PLUGIN_DIR=/nonexistent ;; esac
if [ -x "$PLUGIN_DIR/bin/nccl-net-driver" ]; then
    for t in $THREADS; do
        echo "== nccl-net-driver, 2 processes, jmesh TCP, JMESH_TCP_THREADS=$t"
        dir=$(mktemp -d)
        for r in 0 1; do
            env JMESH_PROVIDER=tcp JMESH_ADDRESSES=127.0.0.1/8 JMESH_TCP_THREADS=$t JMESH_JAVA_HOME="$JAVA_HOME" \
                "$PLUGIN_DIR/bin/nccl-net-driver" --plugin "$PLUGIN_DIR/libnccl-net-jmesh.so" --rank $r --nranks 2 \
                --dir "$dir" --min 1M --max 4M --iters 2048 --window 8 --group 1 --oneway > "$OUT/driver-t$t-r$r.log" 2>&1 &
        done
        wait
        grep -E 'rank 0: +[0-9]+ ' "$OUT/driver-t$t-r0.log" || { echo "driver FAILED:"; tail -5 "$OUT/driver-t$t-r0.log"; status=1; }
        rm -rf "$dir"
    done
fi
echo "results in $OUT"
exit $status

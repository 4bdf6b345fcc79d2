#!/usr/bin/env bash
# jmesh against perftest on 'pair' and the JMH benchmarks with the verbs provider on 'single', in the testbed
#
# Measurement runs in the Soft-RoCE testbed, by hand (not part of ./test): jmesh against perftest on the same link in
# the same run, and the JMH benchmarks with the verbs provider. Results go to docs/bench/ (commit them).
#
#   scripts/bench testbed [--rounds N] [--no-perf] [--no-jmh] [--out DIR]
#
#   perf: 'pair' topology, guest b serves, guest a is the client. For each round: ib_write_bw and jmesh bw at 4 KiB,
#         64 KiB, 256 KiB and 1 MiB (the same -n for both; jmesh bw --poll spin too at 64 KiB and 1 MiB), then
#         at 2 bytes (-n 2000), three times per round (named rR.K): ib_write_lat against jmesh lat --op write (test
#         'lat': RDMA writes polled in memory) and ib_send_lat against jmesh lat (test 'latsend': isend/irecv).
#         Writes DIR/testbed-perf.tsv (every run) and DIR/testbed-perf-summary.txt (medians and ratios).
#   jmh:  'single' topology (rxe0 talking to itself, one JVM driving both ends), BandwidthBenchmark and
#         LatencyBenchmark with -p provider=rdma and -prof gc, short settings: -f 1 -wi 2 -i 3 -w 1s -r 1s.
#         Writes DIR/jmh-bw-rdma-softroce.json and DIR/jmh-lat-rdma-softroce.json.
#
# Soft-RoCE under QEMU TCG is 100-1000x slower than real RoCE: only the ratios mean something (docs/testing.md).
#
# --guest MODE: the guest half, run in the guests by the host half (not by hand).
#   --guest perf ROUNDS   on 'pair': guest b serves, guest a is the client; ib_write_bw and jmesh bw for every
#                         size (and jmesh bw --poll spin at 64 KiB and 1 MiB), then three times ib_write_lat,
#                         jmesh lat --op write, ib_send_lat and jmesh lat; ROUNDS times (interleaved, so all see the
#                         same host load); logs in $TESTBED_OUT/perf/
#   --guest jmh           on 'single': the JMH benchmarks with the verbs provider, short settings, -prof gc;
#                         JSON in $TESTBED_OUT/jmh-bw.json and jmh-lat.json
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"

# the guest half: the host half below has testbed/run start this file with --guest in every guest
guest() {
  J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:ErrorFile="$TESTBED_RUN/hs_err_${TESTBED_NAME}_%p.log"
     -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
  mode=$1; shift

  if [[ $mode == jmh ]]; then
    common=(-p provider=rdma -f 1 -wi 2 -i 3 -w 1s -r 1s -prof gc -rf json)
    "${J[@]}" jmh BandwidthBenchmark "${common[@]}" -p size=1024,65536,1048576,16777216 -rff "$TESTBED_OUT/jmh-bw.json" \
      && "${J[@]}" jmh LatencyBenchmark "${common[@]}" -p size=8,4096,65536 -rff "$TESTBED_OUT/jmh-lat.json"
    exit $?
  fi

  rounds=${1:-3}
  # size:iterations, the same for perftest and jmesh (≈8-100 MB per step at the testbed's 5-20 MB/s)
  SIZES=(4096:2000 65536:1000 262144:300 1048576:100)
  LAT_N=2000
  LAT_PAIRS=3
  jmesh_testbed_link rxe0
  out=$TESTBED_OUT/perf; mkdir -p "$out"
  fail=0
  step=0

  # run NAME SECS CMD...: one bounded step; the client side retries perftest until its server listens
  run() {
    local name=$1 secs=$2; shift 2
    timeout -k 5 "$secs" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    [[ $rc == 0 ]] || { echo "bench[$TESTBED_NAME]: FAILED ($rc): $name: $*"; tail -n 20 "$out/$name.log" | sed 's/^/    /'; }
    return $rc
  }

  pair() { # pair NAME TOOL ARGS...: the server on b, the client on a, on a port of its own
    local name=$1 tool=$2; shift 2
    local port=$((21000 + step)); step=$((step + 1))
    if [[ $TESTBED_NAME == b ]]; then
      if [[ $tool == perftest ]]; then run "$name-server" 300 "$@" -p "$port"
      else run "$name-server" 300 "${J[@]}" "$@" -p "$port" --timeout 120; fi
    else
      if [[ $tool == perftest ]]; then run "$name" 320 testbed-retry 60 timeout --foreground 240 "$@" -p "$port" "$peer"
      else run "$name" 320 "${J[@]}" "$@" -p "$port" --timeout 120 "$peer"; fi
    fi
  }

  for ((r = 1; r <= rounds; r++)); do
    for sn in "${SIZES[@]}"; do
      s=${sn%%:*} n=${sn##*:}
      pair "r$r-perftest-bw-$s" perftest ib_write_bw -d $dev -x "$gidx" -F -s "$s" -n "$n" || { fail=1; break 2; }
      pair "r$r-jmesh-bw-$s" jmesh bw -d $dev -x "$gidx" -s "$s" -n "$n" --warmup $((n / 5)) || { fail=1; break 2; }
      if [[ $s == 65536 || $s == 1048576 ]]; then
        pair "r$r-jmeshspin-bw-$s" jmesh bw -d $dev -x "$gidx" -s "$s" -n "$n" --warmup $((n / 5)) --poll spin \
          || { fail=1; break 2; }
      fi
    done
    # latency scatters more than bandwidth from run to run: LAT_PAIRS interleaved pairs per round, of each kind:
    # lat = RDMA write ping-pong polled in memory (ib_write_lat, jmesh lat --op write),
    # latsend = two-sided ping-pong with receive completions (ib_send_lat, jmesh lat: isend/irecv)
    for ((k = 1; k <= LAT_PAIRS; k++)); do
      pair "r$r.$k-perftest-lat-2" perftest ib_write_lat -d $dev -x "$gidx" -F -s 2 -n $LAT_N || { fail=1; break 2; }
      pair "r$r.$k-jmesh-lat-2" jmesh lat --op write -d $dev -x "$gidx" -s 2 -n $LAT_N --warmup 200 \
        || { fail=1; break 2; }
      pair "r$r.$k-perftest-latsend-2" perftest ib_send_lat -d $dev -x "$gidx" -F -s 2 -n $LAT_N || { fail=1; break 2; }
      pair "r$r.$k-jmesh-latsend-2" jmesh lat -d $dev -x "$gidx" -s 2 -n $LAT_N --warmup 200 || { fail=1; break 2; }
    done
    echo "bench[$TESTBED_NAME]: round $r of $rounds done"
  done
  [[ $fail == 0 ]] && { testbed-barrier bench-done 400 || fail=1; }
  exit $fail
}

[[ ${1:-} == --guest ]] && { shift; guest "$@"; exit; }
cd "$ROOT"
rounds=3 perf=1 jmh=1 out=$ROOT/docs/bench
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=$2; shift ;;
    --no-perf) perf=0 ;;
    --no-jmh) jmh=0 ;;
    --out) out=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^# --guest/ { exit } NR > 1 && /^#/ { print; next } NR > 1 { exit }' \
                 "$ROOT/scripts/bench.d/testbed.sh"; exit 0 ;;
    *) jmesh_die "unknown option '$1' (see --help)" ;;
  esac
  shift
done
jmesh_find_jdk
jmesh_say "building (mvn package) ..."
jmesh_mvn -o package -pl benchmarks -am -DskipTests || jmesh_die "the build failed"
touch benchmarks/target/.jmesh-built
mkdir -p "$out" target/bench-runs
stamp=$(date +%Y%m%d-%H%M%S)
# a run folder of our own: target/testbed may be a link into another tree, which the guests cannot follow
runs=$ROOT/target/bench-runs
# the guests run a snapshot of the jars, so that rebuilding during a long run cannot change them under it
snap=$runs/$stamp-classpath
mkdir -p "$snap" && cp benchmarks/target/jmesh-benchmarks.jar "$snap/" && cp -r benchmarks/target/lib "$snap/"
export JMESH_CP="$snap/jmesh-benchmarks.jar:$snap/lib/*"

if [[ $perf == 1 ]]; then
  rd=$runs/$stamp-perf
  testbed/run --out "$rd" -t $((rounds * 1500)) -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP pair -- \
      bash "$ROOT/scripts/bench.d/testbed.sh" --guest perf "$rounds"
  rc=$?
  [[ $rc == 0 ]] || jmesh_say "the perf run failed (exit $rc); what finished is summarised below (logs: $rd)"
  logs=$rd/a/out/perf
  tsv=$out/testbed-perf.tsv
  printf 'round\ttool\ttest\tbytes\titerations\tvalue\tunit\n' > "$tsv"
  for f in "$logs"/r*-*.log; do
    [[ -f $f ]] || continue
    b=$(basename "$f" .log); r=${b%%-*}; r=${r#r}; rest=${b#*-}; tool=${rest%%-*}; rest=${rest#*-}
    test=${rest%%-*}; size=${rest#*-}
    if [[ $test == bw ]]; then
      # ib_write_bw / jmesh bw: #bytes #iterations peak average msgrate -> BW average (MB/s, 2^20)
      awk -v s="$size" -v r="$r" -v t="$tool" '$1 == s && NF >= 5 { printf "%s\t%s\tbw\t%s\t%s\t%s\tMB/s\n", r, t, $1, $2, $4 }' "$f" | tail -1
    else
      # ib_write_lat / jmesh lat: ... t_typical (column 5), half a round trip in usec
      awk -v s="$size" -v r="$r" -v t="$tool" -v x="$test" '$1 == s && NF >= 9 { printf "%s\t%s\t%s\t%s\t%s\t%s\tusec\n", r, t, x, $1, $2, $5 }' "$f" | tail -1
    fi
  done | sort -k3,3 -k4,4n -k1,1n -k2,2 >> "$tsv"
  {
    echo "# jmesh vs perftest on the testbed's 'pair' link (rxe0, Soft-RoCE under QEMU TCG), $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# $rounds rounds, interleaved; medians over the rounds; ratios only (absolute figures are 100-1000x off real RoCE)"
    printf '%-5s %10s %12s %12s %8s %14s %8s\n' test bytes perftest jmesh ratio jmesh-spin ratio
    awk -F'\t' "$JMESH_AWK_MEDIAN"'
      NR > 1 { k = $3 "\t" $4; v[k, $2] = v[k, $2] " " $6; keys[k] = 1 }
      function ratio(x, p) { return (p > 0 && x != "") ? sprintf("%.2f", x / p) : "-" }
      END { for (k in keys) { split(k, kk, "\t"); p = median(v[k, "perftest"]); j = median(v[k, "jmesh"]); y = median(v[k, "jmeshspin"])
              printf "%-5s %10s %12s %12s %8s %14s %8s\n", kk[1], kk[2], p, j, ratio(j, p), y, ratio(y, p) } }' "$tsv" \
      | sort -k1,1 -k2,2n
    echo "# bw: MB/s (2^20 B/s, BW average), higher is better, ratio = jmesh / ib_write_bw (target >= 1.00 at >= 64 KiB)"
    echo "# lat: t_typical usec (half a round trip), lower is better, ratio = jmesh lat --op write / ib_write_lat (target <= 1.10)"
    echo "# latsend: t_typical usec, ratio = jmesh lat (isend/irecv) / ib_send_lat (two-sided, receive completions)"
    echo "# jmesh-spin: jmesh bw --poll spin (spins like perftest instead of parking when a poll finds nothing)"
  } > "$out/testbed-perf-summary.txt"
  cat "$out/testbed-perf-summary.txt"
fi

if [[ $jmh == 1 ]]; then
  rd=$runs/$stamp-jmh
  testbed/run --out "$rd" -m 2048 -t 1800 -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP single -- \
      bash "$ROOT/scripts/bench.d/testbed.sh" --guest jmh
  rc=$?
  for k in bw lat; do
    if [[ -f $rd/a/out/jmh-$k.json ]]; then
      cp "$rd/a/out/jmh-$k.json" "$out/jmh-$k-rdma-softroce.json"
      jmesh_say "wrote $out/jmh-$k-rdma-softroce.json"
    fi
  done
  [[ $rc == 0 ]] || jmesh_say "the JMH run failed (exit $rc; logs: $rd)"
fi

#!/usr/bin/env bash
# Latency A/B in the testbed: another commit's jmesh against this tree's, interleaved on 'pair'
#
# Latency A/B in the Soft-RoCE testbed, by hand (not part of ./test): the jmesh of another commit against this tree's,
# interleaved on the same guests of 'pair', so that a change is told apart from the day's testbed (whose speed varies
# by 2x from one day, or one run, to the next). Builds OLD in a git worktree under target/, snapshots both jars.
#
#   scripts/bench ab OLD_COMMIT [PAIRS]     (default 4 pairs; each pair runs both jars once, the order switched)
#
# Each pair runs every test of JMESH_AB_TESTS for OLD and for this tree (default "lat latsend"):
#   lat            jmesh lat --op write           latsend-each   jmesh lat --repost each
#   latsend        jmesh lat (isend/irecv)        bw             jmesh bw at JMESH_AB_BW_SIZE bytes (default 4096)
# the latency tests at JMESH_AB_SIZES (comma-separated, default 2), -n 2000. JMESH_AB_EAGER=N runs both with
# JMESH_EAGER_THRESHOLD=N. Logs: target/bench-runs/STAMP-ab/a/out/ab/kK-{old,new}-TEST.log; a table at the end.
#
# --guest PAIRS: the guest half, run in the guests by the host half (not by hand): b serves, a is the client;
# JMESH_AB_JARS has old/ and new/, each a jmesh-benchmarks.jar with its lib/. JMESH_AB_TESTS, JMESH_AB_SIZES,
# JMESH_AB_BW_SIZE and JMESH_AB_EAGER come from the host half (see above).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"

# the guest half: the host half below has testbed/run start this file with --guest in every guest
guest() {
  pairs=${1:-4}
  tests=${JMESH_AB_TESTS:-lat latsend}; sizes=${JMESH_AB_SIZES:-2}; bwsize=${JMESH_AB_BW_SIZE:-4096}
  jv() { echo "$JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED -cp $JMESH_AB_JARS/$1/jmesh-benchmarks.jar:$JMESH_AB_JARS/$1/lib/* io.jmesh.cli.Jmesh"; }
  jmesh_testbed_link rxe0
  out=$TESTBED_OUT/ab; mkdir -p "$out"; step=0
  [[ -n ${JMESH_AB_EAGER:-} ]] && export JMESH_EAGER_THRESHOLD=$JMESH_AB_EAGER
  pair() { # pair NAME old|new ARGS...: the server on b, the client on a, on a port of its own
    local name=$1 jar=$2; shift 2; local port=$((24000 + step)); step=$((step + 1))
    if [[ $TESTBED_NAME == b ]]; then
      timeout 400 $(jv "$jar") "$@" -p $port --timeout 120 > "$out/$name-server.log" 2>&1
    else
      timeout 420 $(jv "$jar") "$@" -p $port --timeout 120 "$peer" > "$out/$name.log" 2>&1
    fi
  }
  for ((k = 1; k <= pairs; k++)); do
    if ((k % 2)); then order="new old"; else order="old new"; fi
    for t in $tests; do
      case $t in
        lat) args=(lat --op write -s "$sizes" -n 2000 --warmup 200) ;;
        latsend) args=(lat -s "$sizes" -n 2000 --warmup 200) ;;
        latsend-each) args=(lat -s "$sizes" -n 2000 --warmup 200 --repost each) ;;
        bw) args=(bw -s "$bwsize" -n 4000 --warmup 800) ;;
        *) echo "ab[$TESTBED_NAME]: unknown test $t (lat, latsend, latsend-each, bw)"; exit 2 ;;
      esac
      for j in $order; do pair "k$k-$j-$t" "$j" "${args[@]}" -d $dev -x "$gidx"; done
    done
    echo "ab[$TESTBED_NAME]: pair $k of $pairs done"
  done
  testbed-barrier ab-done 400
}

[[ ${1:-} == --guest ]] && { shift; guest "$@"; exit; }
cd "$ROOT"
[[ $# -ge 1 ]] || jmesh_die "usage: scripts/bench ab OLD_COMMIT [PAIRS]"
old=$1 pairs=${2:-4}
git rev-parse --verify -q "$old^{commit}" >/dev/null || jmesh_die "no commit '$old' in this repository"
jmesh_find_jdk
stamp=$(date +%Y%m%d-%H%M%S)
snap=$ROOT/target/bench-runs/$stamp-ab-jars
wt=$ROOT/target/bench-ab-old
rm -rf "$wt"; git worktree prune
git worktree add -q --detach "$wt" "$old" || jmesh_die "cannot check out $old into $wt"
jmesh_say "building $old and this tree (mvn package) ..."
JMESH_ROOT=$wt jmesh_mvn -o package -pl benchmarks -am -DskipTests && [[ -f $wt/benchmarks/target/jmesh-benchmarks.jar ]] \
    || jmesh_die "the build of $old failed"
jmesh_mvn -o package -pl benchmarks -am -DskipTests || jmesh_die "the build failed"
mkdir -p "$snap/old" "$snap/new"
cp -r "$wt/benchmarks/target/jmesh-benchmarks.jar" "$wt/benchmarks/target/lib" "$snap/old/"
cp -r benchmarks/target/jmesh-benchmarks.jar benchmarks/target/lib "$snap/new/"
git worktree remove --force "$wt"
rd=$ROOT/target/bench-runs/$stamp-ab
tests=${JMESH_AB_TESTS:-lat latsend}
testbed/run --out "$rd" -t $((pairs * 250 * $(wc -w <<< "$tests") + 300)) -e JAVA_HOME="$JAVA_HOME" \
    -e JMESH_AB_JARS="$snap" -e JMESH_AB_TESTS="$tests" -e JMESH_AB_SIZES="${JMESH_AB_SIZES:-2}" \
    -e JMESH_AB_BW_SIZE="${JMESH_AB_BW_SIZE:-4096}" -e JMESH_AB_EAGER="${JMESH_AB_EAGER:-}" pair -- \
    bash "$ROOT/scripts/bench.d/ab.sh" --guest "$pairs"
rc=$?
printf '%-4s %-13s %7s %12s %12s %8s\n' pair test bytes old new new/old
for f in "$rd"/a/out/ab/k*-old-*.log; do
  [[ -f $f ]] || continue
  b=$(basename "$f" .log); k=${b%%-*}; t=${b#*-old-}; n=${f/-old-/-new-}
  # t_typical is column 5 of a latency row (9 columns), BW average column 4 of a bandwidth row (5 columns)
  if [[ $t == bw ]]; then col=4 cells=5; else col=5 cells=9; fi
  for s in $(awk -v c=$cells '$1 ~ /^[0-9]+$/ && NF == c { print $1 }' "$f"); do
    o=$(awk -v s="$s" -v c=$cells -v k=$col '$1 == s && NF == c { v = $k } END { print v }' "$f")
    w=$(awk -v s="$s" -v c=$cells -v k=$col '$1 == s && NF == c { v = $k } END { print v }' "$n" 2>/dev/null)
    awk -v k="$k" -v t="$t" -v s="$s" -v o="$o" -v w="$w" 'BEGIN { printf "%-4s %-13s %7s %12s %12s %8s\n", k, t, s, o, w, (o > 0 && w > 0) ? sprintf("%.2f", w / o) : "-" }'
  done
done
echo "# latency: t_typical usec (half a round trip), lower is better; bw: MB/s, higher is better;"
echo "# compare the median of new/old over the pairs"
exit $rc

#!/usr/bin/env bash
# Runs inside the testbed guests for scripts/bench ab (not by hand): b serves, a is the client; JMESH_AB_JARS has
# old/ and new/, each a jmesh-benchmarks.jar with its lib/. JMESH_AB_TESTS, JMESH_AB_SIZES, JMESH_AB_BW_SIZE and
# JMESH_AB_EAGER come from scripts/bench ab (see there).
set -uo pipefail
pairs=${1:-4}
tests=${JMESH_AB_TESTS:-lat latsend}; sizes=${JMESH_AB_SIZES:-2}; bwsize=${JMESH_AB_BW_SIZE:-4096}
jv() { echo "$JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED -cp $JMESH_AB_JARS/$1/jmesh-benchmarks.jar:$JMESH_AB_JARS/$1/lib/* io.jmesh.cli.Jmesh"; }
dev=rxe0; v=TESTBED_DEV_${dev}_GIDX; gidx=${!v}; v=TESTBED_DEV_${dev}_PEER_IP; peer=${!v}
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

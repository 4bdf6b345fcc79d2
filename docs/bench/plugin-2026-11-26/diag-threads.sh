# Diagnostic, run in pair by hand (testbed/run -e JAVA_HOME -e JMESH_CP -e JMESH_PLUGIN_DIR=LAYOUT pair -- bash THIS):
# per-thread CPU (one awk every 10 s) of the plugin JVM in nccl-net-driver --calls and of jmesh lat JVM
rank=1; [[ $TESTBED_NAME == a ]] && rank=0
P=$JMESH_PLUGIN_DIR; out=$TESTBED_OUT; dev=rxe0; v=TESTBED_DEV_${dev}_GIDX; gidx=${!v}; v=TESTBED_DEV_${dev}_PEER_IP; peer=${!v}
sample() { # sample PID FILE
  while kill -0 $1 2>/dev/null; do
    awk '{ c=$0; sub(/^[0-9]+ \(/,"",c); sub(/\) .*/,"",c); r=$0; sub(/.*\) /,"",r); split(r,f," "); print f[12]+f[13], c }' /proc/$1/task/*/stat > $2.tmp 2>/dev/null && mv $2.tmp $2
    sleep 10
  done
}
report() { echo "   JIT CPU s: $(awk '/Compiler/ {s += $1} END {print s/100}' $1), all threads CPU s: $(awk '{s += $1} END {print s/100}' $1)"; sort -n -r $1 | head -4 | tr '\n' ';'; echo; }
dir=$TESTBED_SHARED/d1; mkdir -p $dir
env -u JAVA_HOME JMESH_PROVIDER=rdma JMESH_HANDSHAKE_TIMEOUT_MS=60000 $P/bin/nccl-net-driver --plugin $P/libnccl-net-jmesh.so --rank $rank --nranks 2 --dir $dir --timeout 500 --calls 2000 --min 8 --max 8 --window 32 --warm-seconds 60 > $out/drv.log 2>&1 &
pid=$!; sample $pid $out/drv-threads.txt & wait $pid
echo "== driver"; grep 'ping\|echo' $out/drv.log; report $out/drv-threads.txt
testbed-barrier mid 300
J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$JMESH_CP" io.jmesh.cli.Jmesh)
if [[ $TESTBED_NAME == b ]]; then "${J[@]}" lat -d $dev -x $gidx -s 8 -n 2000 -p 25100 --timeout 120 > $out/lat.log 2>&1 &
else sleep 5; "${J[@]}" lat -d $dev -x $gidx -s 8 -n 2000 -p 25100 --timeout 120 $peer > $out/lat.log 2>&1 & fi
pid=$!; sample $pid $out/lat-threads.txt & wait $pid
echo "== jmesh lat"; tail -2 $out/lat.log | head -1; report $out/lat-threads.txt

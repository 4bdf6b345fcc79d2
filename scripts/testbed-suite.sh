# The real-verbs part of ./test, sourced by it: the perftest smoke suite and the "rdma"-tagged JUnit tests, each
# inside Soft-RoCE testbed guests. Adds to ./test's passed/failed/skipped counts through add_counts.

# modules whose tests run in the guests; each contributes target/test-classes, target/classes and its dependencies
TESTBED_MODULES=(verbs-bindings transport benchmarks)

testbed_classpath() {
    local cp="" m
    for m in "${TESTBED_MODULES[@]}"; do
        [ -f "$m/target/test-classpath.txt" ] || { echo ""; return; }
        cp="$cp:$JMESH_ROOT/$m/target/test-classes:$JMESH_ROOT/$m/target/classes:$(cat "$m/target/test-classpath.txt")"
    done
    echo "${cp#:}"
}

# runs "$@" (a testbed command whose last line is "...: N passed, N failed, N skipped") and adds its counts
testbed_step() {
    local label=$1 log line p f s status
    shift
    log=target/testbed-$label.log
    echo "== testbed: $label =="
    "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    line=$(grep -E '^[a-z]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ -n "$line" ]; then
        p=$(echo "$line" | sed 's/.*: \([0-9]*\) passed.*/\1/')
        f=$(echo "$line" | sed 's/.* \([0-9]*\) failed.*/\1/')
        s=$(echo "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
        add_counts "$p" "$f" "${s:-0}"
        # the failing tests' lines, for the digest ./test prints last (CI shows only the end of the output)
        [ "${f:-0}" -gt 0 ] && grep -E '✘|cli-check FAIL|driver: rank [0-9]+: FAIL|: FAIL\b' "$log" | head -10 \
            | sed "s/^/  $label: /" >> target/test-failures.txt
    fi
    if [ "$status" -ne 0 ] && { [ -z "$line" ] || [ "${f:-0}" -eq 0 ]; }; then
        echo "testbed $label: failed with exit status $status before reporting tests (log: $log)" \
            | tee -a target/test-failures.txt
        add_counts 0 1 0
    fi
}

if ! why=$(testbed/run --check 2>&1); then
    if [ -n "${CI:-}" ]; then
        echo "testbed: cannot start, and CI must run it: $why"
        add_counts 0 1 0
    else
        echo "testbed: skipped: $why"
    fi
else
    cp=$(testbed_classpath)
    testbed_step smoke testbed/smoke
    if [ -z "$cp" ]; then
        echo "testbed: no test class path (the Maven build above failed?)"
        add_counts 0 1 0
    else
        # pair: one queue pair per connection; triangle: two per connection (JMESH_QPS_PER_CONNECTION=2);
        # twins: one per link, over both links, on /31 links (each the only two hosts of its subnet)
        testbed_step junit-pair testbed/junit --retry-infra pair --classpath "$cp"
        testbed_step junit-triangle testbed/junit --retry-infra -e JMESH_QPS_PER_CONNECTION=2 triangle \
            --classpath "$cp"
        testbed_step junit-twins testbed/junit --retry-infra --prefix 31 twins --classpath "$cp"
        # the device's async events: the guest's only link set down under a connection to itself
        testbed_step junit-single testbed/junit --retry-infra single --classpath "$cp" \
            -- --select-class io.jmesh.transport.rdma.RdmaPortDownTest
        # meshes that are not full, every node to every other through relays: a - b - c (and its relay killed
        # mid-transfer, and frozen after a relayed connection outlived its liveness timeout idle and streaming; and
        # a sender closing gracefully through it), a ring of four, and a line of four
        testbed_step junit-line3 testbed/junit --retry-infra line:3 --classpath "$cp" \
            -- --select-class io.jmesh.transport.rdma.RdmaRelayTest \
            --select-class io.jmesh.transport.rdma.RdmaRelayedCloseTest \
            --select-class io.jmesh.transport.rdma.RdmaKilledRelayTest \
            --select-class io.jmesh.transport.rdma.RdmaFrozenRelayTest
        testbed_step junit-ring4 testbed/junit --retry-infra ring:4 --classpath "$cp" \
            -- --select-class io.jmesh.transport.rdma.RdmaRelayTest
        # a - b - c - d: a reaches d through two relays (b pushes records to c), a's close travels both, and c
        # killed mid-transfer
        testbed_step junit-line4 testbed/junit --retry-infra line:4 --classpath "$cp" \
            -- --select-class io.jmesh.transport.rdma.RdmaRelayTest \
            --select-class io.jmesh.transport.rdma.RdmaRelayedCloseTest \
            --select-class io.jmesh.transport.rdma.RdmaKilledRelayTest
        # aarch64, what jmesh's users run: arm64 guests (qemu-system-aarch64, TCG) of pair, with Debian's arm64 JDK
        # and rdma-core: the bindings' layouts against gcc for aarch64, the inline verbs and the contract suite on
        # real verbs (the subset, and why: docs/testing.md, "arm64 guests")
        M=io.jmesh.transport.rdma.RdmaMeshTest
        testbed_step junit-arm64-pair testbed/junit --retry-infra --arch arm64 --tag rdma --tag native pair \
            --classpath "$cp" -- --select-class io.jmesh.verbs.RxeSmokeTest \
            --select-class io.jmesh.verbs.LayoutMatchesCTest --select-class io.jmesh.verbs.InlineVerbsTest \
            --select-class io.jmesh.cli.DevicesCommandTest \
            --select-class io.jmesh.api.contract.RdmaSenderReceiverContractTest \
            --select-method "$M#thirtyTwoMessagesInFlightAndGroupedReceivesMatchByTag" \
            --select-method "$M#receivesPostedWithMoreAreAnnouncedTogetherAndArriveIntact" \
            --select-method "$M#oneSidedWriteAndReadReachEveryPeersMemory" \
            --select-method "$M#everyLinkToAPeerCarriesData"
    fi
    # the NCCL plugin over verbs: nccl-net-driver in every guest of pair, triangle, line:3 and ring:4, all ranks to
    # all, through relay nodes where no link joins two ranks (docs/nccl.md)
    if [ -x nccl-shim/target/nccl-plugin/bin/nccl-net-driver ]; then
        testbed_step nccl scripts/nccl-testbed.sh pair triangle line:3 ring:4
        # the aarch64 layout, built here (cross-compiled library and driver, jlink'd aarch64 runtime), driven between
        # two arm64 guests over verbs
        if scripts/nccl-layout-arm64.sh > target/nccl-layout-arm64.log 2>&1; then
            tail -1 target/nccl-layout-arm64.log
            testbed_step nccl-arm64 scripts/nccl-testbed.sh --arch arm64 pair
        else
            tail -20 target/nccl-layout-arm64.log
            echo "testbed: the aarch64 plugin layout could not be built (target/nccl-layout-arm64.log)" \
                | tee -a target/test-failures.txt
            add_counts 0 1 0
        fi
    else
        echo "testbed: no NCCL plugin layout (nccl-shim/target/nccl-plugin: the Maven build above failed?)"
        add_counts 0 1 0
    fi
    # the command line on real verbs: jmesh doctor (a real handshake), a short jmesh bw and jmesh lat on pair (~70 s)
    testbed_step cli scripts/cli-testbed.sh --retry-infra
fi

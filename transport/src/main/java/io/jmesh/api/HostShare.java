package io.jmesh.api;

import java.util.function.Function;

/**
 * How many of the host's CPUs the TCP helpers of one fabric may take when several processes that use jmesh share the
 * host (the ranks of a node: four GPUs, four ranks). Each fabric starts its own helpers and each polls for a while
 * after its last work; four ranks of 8 helpers on 16 CPUs made a 256 KiB all-reduce take 4.5 ms instead of 0.3-0.4
 * (docs/benchmarks-decode.md), because the polling helpers took the CPUs from the threads they serve.
 */
final class HostShare {
    /** The launchers' names for the ranks on this node, first found wins: torchrun, Open MPI, MPICH. */
    static final String[] LAUNCHER_VARIABLES = {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};
    static final int MAX_THREADS = 8;
    /** The helpers' polling: long where each rank has cores to spare, short where polling would take them. */
    static final int SPIN_US_LONG = 1000;
    static final int SPIN_US_SHORT = 200;

    private HostShare() {
    }

    /** The ranks on this node as the launcher says, or 1; a value that is not a positive number is passed over. */
    static int detect(Function<String, String> environment) {
        for (String name : LAUNCHER_VARIABLES) {
            String v = environment.apply(name);
            if (v == null) {
                continue;
            }
            try {
                int n = Integer.parseInt(v.trim());
                if (n > 0) {
                    return n;
                }
            } catch (NumberFormatException e) {
                // not ours to reject: another launcher's variable, read only as a hint
            }
        }
        return 1;
    }

    /**
     * One rank: up to {@value #MAX_THREADS} (the provider starts no more than the CPUs). Several: together at most
     * half the CPUs, so that the ranks' own threads (NCCL's proxies, the callers) keep the other half.
     */
    static int helperThreads(int cpus, int localRanks) {
        if (localRanks <= 1) {
            return MAX_THREADS;
        }
        return Math.max(1, Math.min(MAX_THREADS, cpus / (2 * localRanks)));
    }

    /** Long polling on a machine of 16 CPUs or more with at least 8 of them per rank; short otherwise. */
    static int spinUs(int cpus, int localRanks) {
        return cpus >= 16 && cpus / Math.max(1, localRanks) >= 8 ? SPIN_US_LONG : SPIN_US_SHORT;
    }
}

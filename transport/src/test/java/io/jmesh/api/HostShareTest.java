package io.jmesh.api;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The TCP helpers' share of a host that several ranks use (measured: docs/benchmarks-decode.md). */
class HostShareTest {
    @Test
    void theLaunchersRankCountIsFoundAndABadOneIsPassedOver() {
        assertEquals(1, HostShare.detect(Map.<String, String>of()::get));
        assertEquals(4, HostShare.detect(Map.of("LOCAL_WORLD_SIZE", "4")::get));
        assertEquals(2, HostShare.detect(Map.of("OMPI_COMM_WORLD_LOCAL_SIZE", " 2 ")::get));
        assertEquals(3, HostShare.detect(Map.of("LOCAL_WORLD_SIZE", "many", "MPI_LOCALNRANKS", "3")::get));
        assertEquals(1, HostShare.detect(Map.of("LOCAL_WORLD_SIZE", "0")::get));
        assertEquals(4, HostShare.detect(Map.of("LOCAL_WORLD_SIZE", "4", "MPI_LOCALNRANKS", "8")::get));
    }

    @Test
    void severalRanksTogetherTakeAtMostHalfTheCpusAndPollLess() {
        // the measured host: 16 CPUs; four ranks ran best with 2 helpers each polling 200 us
        assertEquals(2, HostShare.helperThreads(16, 4));
        assertEquals(200, HostShare.spinUs(16, 4));
        // two ranks there kept the long polling (200 us made 1 MiB 1.3-1.6x slower)
        assertEquals(4, HostShare.helperThreads(16, 2));
        assertEquals(1000, HostShare.spinUs(16, 2));
        // four ranks on 64 CPUs (a 4-GPU host): as one rank on its own
        assertEquals(8, HostShare.helperThreads(64, 4));
        assertEquals(1000, HostShare.spinUs(64, 4));
        // one rank: unchanged; many ranks on few CPUs: still one helper
        assertEquals(8, HostShare.helperThreads(2, 1));
        assertEquals(200, HostShare.spinUs(2, 1));
        assertEquals(1, HostShare.helperThreads(8, 8));
    }

    @Test
    void theContextTakesTheLaunchersCountUnlessSetAndSaysWhere() {
        Context byLauncher = Context.from(Map.of(), Map.of("LOCAL_WORLD_SIZE", "4"));
        assertEquals(4, byLauncher.localRanks());
        assertEquals("auto", byLauncher.valueText(Setting.LOCAL_RANKS));
        Context set = Context.from(Map.of(), Map.of("LOCAL_WORLD_SIZE", "4", "JMESH_LOCAL_RANKS", "2")).conclude();
        assertEquals(2, set.localRanks());
        assertEquals("JMESH_LOCAL_RANKS='2'", set.origin(Setting.LOCAL_RANKS));
        int cpus = Runtime.getRuntime().availableProcessors();
        assertEquals(HostShare.helperThreads(cpus, 2), set.tcpThreads());
        assertEquals(HostShare.spinUs(cpus, 2), set.tcpSpinUs());
        assertEquals(5, Context.from(Map.of(), Map.of("LOCAL_WORLD_SIZE", "4", "JMESH_TCP_THREADS", "5"))
                .tcpThreads());
    }
}

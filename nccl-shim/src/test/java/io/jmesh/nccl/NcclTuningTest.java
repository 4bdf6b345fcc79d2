package io.jmesh.nccl;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;

import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the plugin tells NCCL about a link's speed and latency: the link's own, or what the user set. */
class NcclTuningTest {
    @Test
    void unsetReportsTheLinksOwnSpeedOrNcclSocketsDefaultAndNoLatency() {
        NcclTuning t = NcclTuning.from(Map.of());
        assertEquals(200_000, t.speedFor(200_000));
        assertEquals(NcclTuning.UNKNOWN_SPEED_MBPS, t.speedFor(0));
        assertEquals(0.0, t.latencyUs());
    }

    @Test
    void settingsOverrideTheLink() {
        NcclTuning t = NcclTuning.from(Map.of(NcclTuning.SPEED, " 400000", NcclTuning.LATENCY, "2.5"));
        assertEquals(400_000, t.speedFor(0));
        assertEquals(400_000, t.speedFor(10_000));
        assertEquals(2.5, t.latencyUs());
    }

    @Test
    void badValuesNameTheVariableAndTheRange() {
        for (String bad : List.of("0", "-5", "fast", "10000001")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> NcclTuning.from(Map.of(NcclTuning.SPEED, bad)));
            assertTrue(e.getMessage().startsWith("JMESH_NCCL_SPEED_MBPS=" + bad) && e.getMessage().contains("1 to"),
                    e.getMessage());
        }
        for (String bad : List.of("-1", "NaN", "soon", "1e9")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> NcclTuning.from(Map.of(NcclTuning.LATENCY, bad)));
            assertTrue(e.getMessage().startsWith("JMESH_NCCL_LATENCY_US=" + bad), e.getMessage());
        }
    }

    @Test
    void propertiesCarryTheTuning() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment props = a.allocate(8L * ShimAbi.P_SLOTS, 8);
            MemorySegment name = a.allocateFrom("lo");
            NcclDevice d = new NcclDevice("lo", null, 1, 0, 0, List.of());
            NcclProperties.write(props.address(), 0, d, name, MemorySegment.NULL, false, new NcclTuning(0, 0));
            assertEquals(NcclTuning.UNKNOWN_SPEED_MBPS, props.get(JAVA_LONG, 8L * ShimAbi.P_SPEED));
            assertEquals(0.0, props.get(JAVA_DOUBLE, 8L * ShimAbi.P_LATENCY));
            NcclProperties.write(props.address(), 0, d, name, MemorySegment.NULL, false,
                    new NcclTuning(100_000, 4.0));
            assertEquals(100_000, props.get(JAVA_LONG, 8L * ShimAbi.P_SPEED));
            assertEquals(4.0, props.get(JAVA_DOUBLE, 8L * ShimAbi.P_LATENCY));
        }
    }
}

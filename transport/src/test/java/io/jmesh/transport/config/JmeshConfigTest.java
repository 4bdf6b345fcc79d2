package io.jmesh.transport.config;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class JmeshConfigTest {
    @Test
    void unsetMeansChoosePerAddress() {
        assertEquals(OptionalInt.empty(), JmeshConfig.of(Map.of(), Map.of()).gidIndex());
    }

    @Test
    void propertyBeatsEnvironmentBeatsSeedName() {
        Map<String, String> env = Map.of("JMESH_GID_INDEX", "3", "NCCL_MESH_GID_INDEX", "5");
        assertEquals(OptionalInt.of(1), JmeshConfig.of(Map.of("jmesh.gid.index", "1"), env).gidIndex());
        assertEquals(OptionalInt.of(3), JmeshConfig.of(Map.of(), env).gidIndex());
        assertEquals(OptionalInt.of(5), JmeshConfig.of(Map.of(), Map.of("NCCL_MESH_GID_INDEX", "5")).gidIndex());
    }

    @Test
    void aBadValueNamesTheVariableAndWhatItAccepts() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> JmeshConfig.of(Map.of(), Map.of("NCCL_MESH_GID_INDEX", "three")).gidIndex());
        assertTrue(e.getMessage().startsWith("NCCL_MESH_GID_INDEX='three' is not valid: expected an integer from 0"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> JmeshConfig.of(Map.of(), Map.of("JMESH_GID_INDEX", "-1")).gidIndex());
    }
}

package io.jmesh.api;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ContextTest {
    private static Context env(String... nameValue) {
        return Context.from(Map.of(), map(nameValue));
    }

    private static Map<String, String> map(String... nameValue) {
        java.util.Map<String, String> m = new java.util.HashMap<>();
        for (int i = 0; i < nameValue.length; i += 2) {
            m.put(nameValue[i], nameValue[i + 1]);
        }
        return m;
    }

    @Test
    void defaultsAreTodaysAndValid() {
        Context c = Context.from(Map.of(), Map.of()).conclude();
        assertEquals("auto", c.provider());
        assertEquals(List.of(), c.addresses());
        assertEquals(OptionalInt.empty(), c.gidIndex());
        assertEquals(20, c.ibTimeout());
        assertEquals(7, c.ibRetryCount());
        assertEquals(7, c.ibRnrRetry());
        assertEquals(0, c.ibServiceLevel());
        assertEquals(0, c.ibTrafficClass());
        assertEquals(1, c.qpsPerConnection());
        assertTrue(c.multiLink());
        assertEquals(4, c.tcpSockets());
        assertEquals(1, c.localRanks());
        assertEquals(8, c.tcpThreads());   // one rank: as many as the provider may start (at most the CPUs)
        assertEquals("auto", c.valueText(Setting.TCP_THREADS));
        assertEquals(10_000, c.handshakeTimeoutMs());
        assertEquals(32, c.handshakeMaxPending());
        for (Setting s : Setting.values()) {
            assertNull(c.origin(s), s + " has a default, not an origin");
        }
    }

    @Test
    void propertyBeatsEnvironmentBeatsSeedName() {
        Map<String, String> env = map("JMESH_GID_INDEX", "3", "NCCL_MESH_GID_INDEX", "5");
        Context fromProperty = Context.from(map("jmesh.gid.index", "1"), env);
        assertEquals(OptionalInt.of(1), fromProperty.gidIndex());
        assertEquals("-Djmesh.gid.index='1'", fromProperty.origin(Setting.GID_INDEX));
        assertEquals(OptionalInt.of(3), Context.from(Map.of(), env).gidIndex());
        assertEquals(OptionalInt.of(5), env("NCCL_MESH_GID_INDEX", "5").gidIndex());
        assertEquals(2_500, env("NCCL_MESH_TIMEOUT_MS", "2500").handshakeTimeoutMs());
        assertEquals(17, env("JMESH_HANDSHAKE_MAX_PENDING", " 17 ").handshakeMaxPending());
    }

    @Test
    void readsEverySettingByItsEnvironmentName() {
        Context c = env("JMESH_PROVIDER", "TCP", "JMESH_ADDRESSES", "127.0.0.1/8, 10.1.2.3/24",
                "JMESH_IB_TIMEOUT", "18", "JMESH_IB_RETRY_CNT", "3", "JMESH_IB_RNR_RETRY", "2", "JMESH_IB_SL", "4",
                "JMESH_IB_TC", "106", "JMESH_QPS_PER_CONNECTION", "2", "JMESH_MULTI_LINK", "0",
                "JMESH_TCP_SOCKETS", "8", "JMESH_TCP_SPIN_US", "0", "JMESH_HANDSHAKE_TIMEOUT_MS", "200").conclude();
        assertEquals("tcp", c.provider());
        assertEquals(List.of(IpPrefix.parse("127.0.0.1/8"), IpPrefix.parse("10.1.2.3/24")), c.addresses());
        assertEquals(List.of(18, 3, 2, 4, 106, 2, 8), List.of(c.ibTimeout(), c.ibRetryCount(), c.ibRnrRetry(),
                c.ibServiceLevel(), c.ibTrafficClass(), c.qpsPerConnection(), c.tcpSockets()));
        assertFalse(c.multiLink());
        assertEquals(0, c.tcpSpinUs());
        assertEquals(200, c.handshakeTimeout().toMillis());
    }

    @Test
    void aBadValueNamesWhereItCameFromTheSettingAndWhatItAccepts() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> env("NCCL_MESH_GID_INDEX", "three").conclude());
        assertEquals("NCCL_MESH_GID_INDEX='three' is not valid: JMESH_GID_INDEX (-Djmesh.gid.index, "
                + "NCCL_MESH_GID_INDEX) takes an integer from 0 to 65535 (" + Setting.GID_INDEX.description() + ")",
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> env("JMESH_IB_TIMEOUT", "40").conclude());
        assertTrue(e.getMessage().startsWith("JMESH_IB_TIMEOUT='40' is not valid: JMESH_IB_TIMEOUT "
                + "(-Djmesh.ib.timeout) takes an integer from 1 to 31 (RC local ACK timeout"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> env("JMESH_GID_INDEX", "-1").conclude());
        assertTrue(e.getMessage().contains("from 0 to 65535"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> env("JMESH_MULTI_LINK", "2").conclude());
        assertTrue(e.getMessage().contains("JMESH_MULTI_LINK (-Djmesh.multi.link) takes 0 or 1"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> env("JMESH_ADDRESSES", "10.0.0.1/24,eth0").conclude());
        assertTrue(e.getMessage().startsWith("JMESH_ADDRESSES='10.0.0.1/24,eth0' is not valid (not an IP address: "
                + "'eth0'"), e.getMessage());
    }

    @Test
    void aBadSetterValueIsNamedByTheCallAndTheSettingsNames() {
        Context c = Context.from(Map.of(), Map.of()).handshakeTimeoutMs(50);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, c::conclude);
        assertTrue(e.getMessage().startsWith("Context.handshakeTimeoutMs(50) is not valid: JMESH_HANDSHAKE_TIMEOUT_MS "
                + "(-Djmesh.handshake.timeout.ms, NCCL_MESH_TIMEOUT_MS) takes an integer from 100 to 3600000"),
                e.getMessage());
    }

    @Test
    void concludeReportsEveryBadSettingAtOnce() {
        Context c = env("JMESH_TCP_SOCKETS", "0", "JMESH_IB_SL", "x").qpsPerConnection(9);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, c::conclude);
        assertTrue(e.getMessage().startsWith("3 settings are not valid: "), e.getMessage());
        for (String name : List.of("JMESH_IB_SL='x'", "Context.qpsPerConnection(9)", "JMESH_TCP_SOCKETS='0'")) {
            assertTrue(e.getMessage().contains(name), name + " missing: " + e.getMessage());
        }
    }

    @Test
    void aSetterReplacesAValueReadBadOrNot() {
        Context c = env("JMESH_IB_TIMEOUT", "40", "JMESH_TCP_SOCKETS", "2");
        assertSame(c, c.ibTimeout(18).tcpSockets(6).conclude());
        assertEquals(18, c.ibTimeout());
        assertEquals(6, c.tcpSockets());
        assertEquals("Context.tcpSockets(6)", c.origin(Setting.TCP_SOCKETS));
    }

    @Test
    void providerNamesAndAliasesComeFromTheRegisteredProviders() {
        assertEquals("rdma", Providers.find(env("JMESH_PROVIDER", "verbs").conclude().provider()).name());
        assertEquals("tcp", Providers.find(Context.from(Map.of(), Map.of()).provider("Socket").provider()).name());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> env("JMESH_PROVIDER", "carrier-pigeon").conclude());
        assertTrue(e.getMessage().startsWith("JMESH_PROVIDER='carrier-pigeon' is not valid: JMESH_PROVIDER "
                + "(-Djmesh.provider) takes auto, rdma (also verbs, ib, roce) or tcp (also socket)"), e.getMessage());
    }

    @Test
    void theSeedsDisableRdmaMeansTcpUnlessAProviderIsNamed() {
        assertEquals("tcp", env("NCCL_MESH_DISABLE_RDMA", "1").provider());
        assertEquals("auto", env("NCCL_MESH_DISABLE_RDMA", "0").provider());
        assertEquals("rdma", env("NCCL_MESH_DISABLE_RDMA", "1", "JMESH_PROVIDER", "rdma").provider());
        assertEquals("auto", env("JMESH_DISABLE_RDMA", "1").provider("auto").provider());
    }

    @Test
    void valueTextIsWhatTheDocsWriteAndSettingsAreListedInTheirDocOrder() {
        Context c = Context.from(Map.of(), Map.of());
        assertEquals("per address", c.valueText(Setting.GID_INDEX));
        assertEquals("all", c.valueText(Setting.ADDRESSES));
        assertEquals("10000", c.valueText(Setting.HANDSHAKE_TIMEOUT_MS));
        assertEquals("1", c.valueText(Setting.MULTI_LINK));
        c.addresses("10.0.0.1/24").gidIndex(3);
        assertEquals("10.0.0.1/24", c.valueText(Setting.ADDRESSES));
        assertEquals("3", c.valueText(Setting.GID_INDEX));
        assertEquals(Setting.PROVIDER, Setting.values()[0]);
        assertTrue(c.toString().contains("JMESH_GID_INDEX=3 from Context.gidIndex(3)"), c.toString());
    }
}

package io.jmesh.verbs;

import io.jmesh.verbs.ffi.ibv_send_wr;
import io.jmesh.verbs.ffi.verbs_h;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The bindings agree with C: every struct and member of the generated classes has gcc's offset and size, every
 * struct gcc's size and alignment, every constant gcc's value, compiled from the same verbs.h.
 */
@Tag("native")                // also run in the arm64 testbed guests, where gcc compiles the probe for aarch64
class LayoutMatchesCTest {
    static final Path HEADER = Path.of("/usr/include/infiniband/verbs.h");

    @BeforeAll
    static void toolsPresent() {
        if (!Files.isReadable(HEADER) || !onPath("gcc")) {
            fail("the layout check needs gcc and " + HEADER + ": run ./test (it installs them) or "
                    + "'apt-get install gcc libibverbs-dev'");
        }
        Libibverbs.requireLoadable();
    }

    private static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    @Test
    void everyStructMemberAndConstantMatchesGcc(@TempDir Path dir) throws Exception {
        CLayoutProbe probe = new CLayoutProbe();
        Path generated = Path.of(verbs_h.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                .resolve("io/jmesh/verbs/ffi");
        probe.addBindings(generated, "io.jmesh.verbs.ffi", verbs_h.class);
        Map<String, String> c = probe.runC(dir, "infiniband/verbs.h");

        List<String> bad = CLayoutProbe.mismatches(probe.javaRows(), c);
        if (!bad.isEmpty()) {
            fail(bad.size() + " layout mismatches between the Java bindings and gcc:\n  " + String.join("\n  ", bad));
        }
        long members = probe.javaRows().stream().filter(r -> r.key().startsWith("member|")).count();
        long constants = probe.javaRows().stream().filter(r -> r.key().startsWith("const|")).count();
        long structs = probe.javaRows().stream().filter(r -> r.key().startsWith("sizeof|")).count();
        System.out.printf("layout check: %d structs, %d members, %d constants identical to gcc%n",
                structs, members, constants);
        // the structs the transport's data path and QP setup depend on must be among those checked
        for (String key : List.of("member|ibv_send_wr.wr.rdma.remote_addr", "member|ibv_send_wr.imm_data",
                "member|ibv_context.ops", "member|ibv_context_ops.post_send", "member|ibv_context_ops.poll_cq",
                "member|ibv_qp_attr.ah_attr.grh.dgid", "member|ibv_wc.byte_len", "member|verbs_context.query_port",
                "member|ibv_gid_entry.gid_type", "const|IBV_WR_RDMA_WRITE_WITH_IMM", "const|IBV_QPS_RTS",
                "const|IBV_ACCESS_OPTIONAL_RANGE", "const|IBV_LINK_LAYER_ETHERNET", "const|IBV_GID_TYPE_ROCE_V2")) {
            assertTrue(c.containsKey(key), key + " was not checked");
        }
        assertTrue(members > 400, "only " + members + " members checked");
    }

    @Test
    void aMismatchNamesTheStructAndMember(@TempDir Path dir) throws Exception {
        CLayoutProbe probe = new CLayoutProbe();
        // a deliberately wrong copy of ibv_sge: lkey and length swapped
        probe.addStruct("ibv_sge", MemoryLayout.structLayout(
                ValueLayout.JAVA_LONG.withName("addr"),
                ValueLayout.JAVA_INT.withName("lkey"),
                ValueLayout.JAVA_INT.withName("length")));
        List<String> bad = CLayoutProbe.mismatches(probe.javaRows(), probe.runC(dir, "infiniband/verbs.h"));
        assertEquals(List.of(
                "struct ibv_sge member lkey: Java 8/4 but C 12/4 (offset/size in bytes)",
                "struct ibv_sge member length: Java 12/4 but C 8/4 (offset/size in bytes)"), bad);
    }

    @Test
    void generatedSendWrKeepsCsUnionsAndNesting() {
        // ibv_post_send in C writes these exact offsets; the hand-written data path relies on them
        assertEquals(128, ibv_send_wr.sizeof());
        assertEquals(40, ibv_send_wr.layout().byteOffset(MemoryLayout.PathElement.groupElement("wr")));
    }
}

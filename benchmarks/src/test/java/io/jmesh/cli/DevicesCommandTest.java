package io.jmesh.cli;

import io.jmesh.testbed.TestbedEnv;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class DevicesCommandTest {
    private static String run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Jmesh.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return rc + "\n" + out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void anUnknownCommandIsRefusedWithTheUsage() {
        String out = run("frobnicate");
        assertTrue(out.startsWith("2\n"), out);
        assertTrue(out.contains("unknown command 'frobnicate'") && out.contains("usage: jmesh COMMAND"), out);
    }

    @Test
    void withoutRdmaItExplainsWhyThereAreNoDevices() {
        assumeTrue(System.getenv("JMESH_TESTBED") == null, "this machine has RDMA devices (testbed guest)");
        assumeTrue(!java.nio.file.Files.exists(java.nio.file.Path.of("/sys/class/infiniband")),
                "this machine has RDMA devices");
        String out = run("devices");
        assertTrue(out.startsWith("0\nNo RDMA devices on this machine.\n"), out);
        // without libibverbs installed the library's absence is the reason; with it, the kernel's
        assertTrue(out.contains("cannot be loaded") || out.contains("no RDMA devices: ") && (out.contains("ENOSYS")
                || out.contains("has no device")), out);
    }

    /** In the Soft-RoCE testbed: one row per rxe device with its netdev, address/prefix and the right GID index. */
    @Test
    @Tag("rdma")
    void listsEveryRxeDeviceWithTheTestbedsGidIndex() {
        TestbedEnv.require();
        String out = run("devices");
        assertTrue(out.startsWith("0\n"), out);
        List<String> lines = Arrays.asList(out.split("\n"));
        for (String dev : TestbedEnv.devices()) {
            String ip = TestbedEnv.dev(dev, "IP");
            String prefix = TestbedEnv.dev(dev, "PREFIX");
            String gid = TestbedEnv.dev(dev, "GIDX");
            String netdev = TestbedEnv.dev(dev, "NETDEV");
            List<String> row = lines.stream().filter(l -> l.startsWith(dev + " ") && l.contains(" " + ip + "/"))
                    .toList();
            assertEquals(1, row.size(), "one row for " + dev + " " + ip + " in:\n" + out);
            List<String> cells = Arrays.asList(row.getFirst().trim().split("\\s+"));
            assertTrue(cells.contains("ACTIVE") && cells.contains(netdev) && cells.contains(ip + "/" + prefix),
                    row.getFirst());
            assertEquals(gid, cells.get(cells.indexOf(ip + "/" + prefix) + 1), "GID column of " + row.getFirst());
        }
    }
}

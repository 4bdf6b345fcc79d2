package io.jmesh.cli.doctor;

import io.jmesh.cli.Jmesh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** 'jmesh doctor --provider tcp' on one machine: a serving peer and a checking node, each on a loopback subnet. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DoctorTcpTest {
    record Result(int rc, String out, String err) {
    }

    static Result run(List<String> args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Jmesh.run("doctor", args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aTcpMeshPassesWithAddressesMtuListenerAndAHandshake() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String p = Integer.toString(port);
        CompletableFuture<Result> server = CompletableFuture.supplyAsync(() -> run(List.of("--serve", "--provider",
                "tcp", "--addresses", "127.0.97.1/24", "--count", "1", "-p", p, "--name", "srv", "--timeout", "30")));
        Result check = null;
        for (int i = 0; i < 100; i++) { // the server's port opens once its fabric runs
            check = run(List.of("--provider", "tcp", "--addresses", "127.0.97.2/24", "-p", p, "--name", "cli",
                    "--timeout", "30", "127.0.0.1"));
            if (!check.out().contains("Connection refused")) {
                break;
            }
            Thread.sleep(100);
        }
        Result srv = server.get(60, TimeUnit.SECONDS);
        assertEquals(0, check.rc(), check.out() + check.err());
        assertEquals(0, srv.rc(), srv.out() + srv.err());
        String text = check.out();
        assertTrue(text.startsWith("jmesh doctor on cli (TCP provider)"), text);
        assertTrue(text.contains("[ OK ] TCP addresses: 127.0.97.2/24 (lo)"), text);
        assertTrue(text.contains("[ OK ] MTU lo "), text);
        assertTrue(text.contains("[ OK ] peer 127.0.0.1 (srv): TCP handshake over tcp 127.0.97.2/24 -> "
                + "127.0.97.1/24 in "), text);
        assertTrue(text.contains("65536 bytes sent and verified"), text);
        assertTrue(text.contains("summary: ") && text.contains(" 0 failed"), text);
        assertTrue(!text.contains("RDMA"), "nothing about RDMA in the TCP mode:\n" + text);
    }
}

package io.jmesh.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.jmesh.api.Registration;
import io.jmesh.api.Setting;
import io.jmesh.api.Status;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.api.ListenHandle;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A peer process that is stopped (SIGSTOP) while connected both ways, in a child JVM ({@link FrozenPeerChild}): its
 * kernel still acknowledges TCP, so only liveness can tell. First the child runs but never polls, for three liveness
 * timeouts, and nothing fails (its liveness thread answers for it); then it is stopped, and this side's receiver, with
 * a receive pending, and its sender both fail with "the peer stopped answering".
 */
@Timeout(120)
class TcpFrozenPeerTest {
    private static final long LIVENESS_MS = 2_000;

    @Test
    void aStoppedPeerFailsBothDirectionsAndAPeerThatOnlyDoesNotPollDoesNot() throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/bin/kill")), "needs /bin/kill to stop and continue the child");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // the eager path off: a send to the peer that does not poll must wait for its receive
        try (TcpProvider provider = TcpTestSupport.provider("127.0.78.1/24", Setting.LIVENESS_TIMEOUT_MS.property(),
                Long.toString(LIVENESS_MS), Setting.TCP_EAGER_THRESHOLD.property(), "0");
             Arena arena = Arena.ofShared()) {
            TcpListener listener = provider.listen();
            ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-cp",
                    System.getProperty("java.class.path"), FrozenPeerChild.class.getName(), "127.0.78.2/24",
                    listener.handleText());
            pb.redirectError(ProcessBuilder.Redirect.INHERIT);
            Process child = pb.start();
            try {
                BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(),
                        StandardCharsets.UTF_8));
                String first = out.readLine();
                assertTrue(first != null && first.startsWith("handle "), "the child said: " + first);
                TcpConnect connect = provider.connect(ListenHandle.parse(first.substring(7)));
                CoreSender[] s = new CoreSender[1];
                CoreReceiver[] r = new CoreReceiver[1];
                TcpTestSupport.await("connected both ways", () -> {
                    if (s[0] == null) {
                        s[0] = connect.poll();
                    }
                    if (r[0] == null) {
                        r[0] = listener.accept();
                    }
                    return s[0] != null && r[0] != null;
                });
                assertEquals("connected", out.readLine());
                Registration reg = provider.register(arena.allocate(8192, 4096));
                int recv = r[0].irecv(1, new Registration[] {reg}, new long[] {0}, new long[] {4096}, new int[] {1});
                assertTrue(recv >= 0, Status.describe(recv));

                long idleUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3 * LIVENESS_MS);
                while (System.nanoTime() - idleUntil < 0) {
                    assertEquals(0, r[0].test(recv), () -> "failed while the peer only did not poll: " + r[0].error());
                    assertEquals(Status.NOT_READY, s[0].isend(reg, 4096, 4096, 1), () -> "" + s[0].error());
                    Thread.sleep(10);
                }

                signal("STOP", child);
                long stopped = System.nanoTime();
                int[] status = new int[2];
                TcpTestSupport.await("both ends fail", () -> {
                    if (status[0] == 0) {
                        status[0] = r[0].test(recv);
                    }
                    if (status[1] == 0 || status[1] == Status.NOT_READY) {
                        status[1] = s[0].isend(reg, 4096, 4096, 1);
                    }
                    return status[0] < 0 && status[1] < 0 && status[1] != Status.NOT_READY;
                });
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopped);
                System.out.println("the stopped peer failed both ends " + ms + " ms after SIGSTOP (liveness timeout "
                        + LIVENESS_MS + " ms)");
                assertEquals(Status.FAILED, status[0], Status.describe(status[0]));
                assertEquals(Status.FAILED, status[1], Status.describe(status[1]));
                for (String error : new String[] {r[0].error(), s[0].error()}) {
                    assertTrue(error.startsWith("the peer stopped answering: no sign of life from the process at "
                            + "127.0.78.2"), error);
                }
            } finally {
                signal("CONT", child);
                child.getOutputStream().close();
                if (!child.waitFor(30, TimeUnit.SECONDS)) {
                    child.destroyForcibly();
                }
            }
        }
    }

    private static void signal(String name, Process p) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("/bin/kill", "-" + name, Long.toString(p.pid())).inheritIO().start();
        assertTrue(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0, "kill -" + name + " failed");
    }
}

package io.jmesh.cli;

import io.jmesh.api.Connector;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.Listener;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Setting;
import io.jmesh.api.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A line a - b - c on loopback subnets, with b a separate process running 'jmesh relay' and liveness at 1 s on every
 * node: a relayed connection idle for five timeouts and then streaming for five more fails nothing (it used to fail
 * after one: the connector pinged c, which is no neighbour of it); b frozen (SIGSTOP) or killed mid-stream fails both
 * ends within two timeouts, each naming the relay. That bound has 4 s of grace for a loaded machine: it is a deadline
 * that only a missing watch (a hang, or a 30 s default) can miss, not a speed check; every other wait is a hang guard.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RelayLivenessTest {
    private static final long TIMEOUT_MS = 1_000;
    private static final int SIZE = 1 << 20;
    private static final String A = "127.73.1.1";
    private static final String B1 = "127.73.1.2";
    private static final String B2 = "127.73.2.2";
    private static final String C = "127.73.2.3";

    private final int routePort = ThreadLocalRandom.current().nextInt(30_000, 40_000);
    private final List<AutoCloseable> open = new ArrayList<>();
    private Process relay;

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
        if (relay != null) {
            signal("CONT");
            relay.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static void await(String what, long ms, java.util.function.BooleanSupplier done) {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                fail("not within " + ms + " ms: " + what);
            }
            Thread.onSpinWait();
        }
    }

    /** 'jmesh relay' as its own JVM on b's two links; returns once it relays. */
    private void startRelay() throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        relay = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "--add-exports",
                "java.base/sun.nio.ch=ALL-UNNAMED",
                "-D" + Setting.ROUTE_PORT.property() + "=" + routePort,
                "-D" + Setting.LIVENESS_TIMEOUT_MS.property() + "=" + TIMEOUT_MS,
                "-cp", System.getProperty("java.class.path"), Jmesh.class.getName(), "relay",
                "--addresses", B1 + "/24," + B2 + "/24", "--provider", "tcp", "--seconds", "170")
                .redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(relay.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = out.readLine()) != null && !line.contains("relaying (tcp) on")) {
            // start-up lines
        }
        if (line == null) {
            fail("'jmesh relay' ended before it relayed (exit " + relay.waitFor() + ")");
        }
        Thread.ofPlatform().daemon().start(() -> out.lines().forEach(l -> System.out.println("[relay] " + l)));
    }

    private void signal(String name) throws Exception {
        new ProcessBuilder("kill", "-" + name, Long.toString(relay.pid())).inheritIO().start().waitFor();
    }

    private Fabric fabric(String address) {
        Fabric f = Fabric.open(Context.from(Map.of(Setting.ROUTE_PORT.property(), Integer.toString(routePort),
                Setting.LIVENESS_TIMEOUT_MS.property(), Long.toString(TIMEOUT_MS)), Map.of())
                .provider("tcp").addresses(address + "/24"));
        open.add(f);
        return f;
    }

    /** a's sender and c's receiver of one connection through b, with a source and a destination of SIZE. */
    private final class Line {
        final Fabric a = fabric(A);
        final Fabric c = fabric(C);
        final Arena arena = Arena.ofShared();
        final MemorySegment src = arena.allocate(SIZE, 4096);
        final MemorySegment dst = arena.allocate(SIZE, 4096);
        Sender s;
        Receiver r;
        Registration rs;
        Registration rd;

        Line() throws Exception {
            open.add(arena);
            Listener l = c.listen();
            open.add(l);
            Connector connector = a.connect(l.handle());
            Sender[] sp = new Sender[1];
            Receiver[] rp = new Receiver[1];
            await("a connects to c through b", 30_000, () -> {
                sp[0] = sp[0] == null ? connector.poll() : sp[0];
                rp[0] = rp[0] == null ? l.accept() : rp[0];
                return sp[0] != null && rp[0] != null;
            });
            assertTrue(connector.route().contains("via " + B1), connector.route());
            s = sp[0];
            r = rp[0];
            open.add(s);
            open.add(r);
            rs = a.register(src);
            rd = c.register(dst);
            open.add(rs);
            open.add(rd);
        }

        /** One message of SIZE with {@code seed}'s bytes, received whole and checked. */
        void message(int seed) {
            for (int i = 0; i < SIZE; i += 4096) {
                src.set(JAVA_BYTE, i, (byte) (seed + i / 4096));
            }
            int rq = r.irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {SIZE}, new int[] {seed});
            assertTrue(rq >= 0, Status.describe(rq) + ": " + r.error());
            int[] sq = {Status.NOT_READY};
            boolean[] done = new boolean[2];
            await("message " + seed, 30_000, () -> {
                if (sq[0] == Status.NOT_READY) {
                    sq[0] = s.isend(rs, 0, SIZE, seed);
                    assertTrue(sq[0] >= 0 || sq[0] == Status.NOT_READY, s.error());
                    return false;
                }
                done[0] = done[0] || check(s.test(sq[0]), s.error());
                done[1] = done[1] || check(r.test(rq), r.error());
                return done[0] && done[1];
            });
            assertEquals(-1, src.mismatch(dst), "message " + seed + " arrived intact");
        }

        /** A receive that no send matches: it can only end by the connection failing. */
        int waiting(int tag) {
            int rq = r.irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {SIZE}, new int[] {tag});
            assertTrue(rq >= 0, Status.describe(rq) + ": " + r.error());
            return rq;
        }
    }

    private static boolean check(int status, String error) {
        assertTrue(status >= 0, Status.describe(status) + ": " + error);
        return status == 1;
    }

    @Test
    void aRelayedConnectionLivesWhileItsEndsAndRelayDo() throws Exception {
        startRelay();
        Line line = new Line();
        Thread.sleep(5 * TIMEOUT_MS); // idle: only liveness runs
        assertNull(line.s.error(), "the sender after five idle timeouts");
        assertNull(line.r.error(), "the receiver after five idle timeouts");
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(5 * TIMEOUT_MS);
        int n = 0;
        while (System.nanoTime() - end < 0) {
            line.message(++n % 100);
        }
        assertNull(line.s.error(), "the sender after streaming " + n + " messages");
        assertNull(line.r.error(), "the receiver after streaming " + n + " messages");
    }

    @Test
    void aFrozenRelayFailsBothEndsNamingIt() throws Exception {
        stopsMidStream("STOP");
    }

    @Test
    void aKilledRelayFailsBothEnds() throws Exception {
        stopsMidStream("KILL");
    }

    private void stopsMidStream(String how) throws Exception {
        startRelay();
        Line line = new Line();
        line.message(1);
        int rq = line.waiting(2);
        signal(how);
        long stopped = System.nanoTime();
        long bound = 2 * TIMEOUT_MS + 4_000;
        int[] st = {0, 0};
        // the sender keeps offering a message no receive matches (NOT_READY) until its connection fails
        await("both ends fail once the relay is " + how, 30_000, () -> {
            st[0] = st[0] < 0 && st[0] != Status.NOT_READY ? st[0] : line.s.isend(line.rs, 0, SIZE, 3);
            st[1] = st[1] < 0 ? st[1] : line.r.test(rq);
            return st[0] < 0 && st[0] != Status.NOT_READY && st[1] < 0;
        });
        long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopped);
        System.out.println("relay " + how + ": both ends failed after " + took + " ms\n  sender: " + line.s.error()
                + "\n  receiver: " + line.r.error());
        assertTrue(took <= bound, "both ends failed after " + took + " ms, more than two timeouts and 4 s");
        assertEquals(Status.FAILED, st[0], line.s.error());
        assertEquals(Status.FAILED, st[1], line.r.error());
        assertTrue(line.s.error().contains(B1), "the sender's error names the relay: " + line.s.error());
        assertTrue(line.r.error().contains(B2), "the receiver's error names the relay: " + line.r.error());
        if (how.equals("STOP")) {
            assertTrue(line.s.error().contains("the relay " + B1 + " stopped answering")
                    && line.s.error().contains(C), line.s.error());
            // the accepting end knows its neighbour relays once a datagram of the relay's said so; the relay may
            // stop before one arrived, and then the error names its address as the process that stopped
            assertTrue(line.r.error().contains(B2) && line.r.error().contains("stopped answering"), line.r.error());
        }
    }
}

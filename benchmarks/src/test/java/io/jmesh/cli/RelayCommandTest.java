package io.jmesh.cli;

import io.jmesh.api.Connector;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.Listener;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** 'jmesh relay' as the middle of a line a-b-c on loopback: a reaches c through it, with the data intact. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RelayCommandTest {
    private static void await(String what, BooleanSupplier done) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                fail("not within 30 s: " + what);
            }
            Thread.onSpinWait();
        }
    }

    @Test
    void theEndsOfALineReachEachOtherThroughJmeshRelay() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int[] rc = {-1};
        Thread relay = Thread.ofPlatform().start(() -> rc[0] = RelayCommand.run(List.of("--addresses",
                "127.72.1.2/24,127.72.2.2/24", "--provider", "tcp", "--seconds", "100"),
                new PrintStream(out, true, StandardCharsets.UTF_8), System.err));
        try (Fabric a = Fabric.open(Context.from(Map.of(), Map.of()).provider("tcp").addresses("127.72.1.1/24"));
             Fabric c = Fabric.open(Context.from(Map.of(), Map.of()).provider("tcp").addresses("127.72.2.3/24"));
             Listener l = c.listen();
             Arena arena = Arena.ofConfined()) {
            await("the relay starts", () -> out.toString(StandardCharsets.UTF_8).contains("relaying (tcp) on"));
            Connector connector = a.connect(l.handle());
            Sender[] s = new Sender[1];
            Receiver[] r = new Receiver[1];
            await("a connects to c", () -> {
                s[0] = s[0] == null ? connector.poll() : s[0];
                r[0] = r[0] == null ? l.accept() : r[0];
                return s[0] != null && r[0] != null;
            });
            assertTrue(connector.route().contains("via 127.72.1.2"), connector.route());
            MemorySegment src = arena.allocate(100_003);
            MemorySegment dst = arena.allocate(100_003);
            for (int i = 0; i < src.byteSize(); i++) {
                src.set(JAVA_BYTE, i, (byte) (i * 31 + 7));
            }
            Registration rs = a.register(src);
            Registration rd = c.register(dst);
            int rq = r[0].irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {src.byteSize()}, new int[] {4});
            int[] sq = {-1};
            boolean[] done = new boolean[2];
            await("the message crosses the relay", () -> {
                if (sq[0] < 0) {
                    sq[0] = s[0].isend(rs, 0, src.byteSize(), 4); // NOT_READY until c's clear-to-send arrives
                    return false;
                }
                if (!done[0]) {
                    int st = s[0].test(sq[0]);
                    assertTrue(st >= 0, s[0].error());
                    done[0] = st == 1;
                }
                if (!done[1]) {
                    int rt = r[0].test(rq);
                    assertTrue(rt >= 0, r[0].error());
                    done[1] = rt == 1;
                }
                return done[0] && done[1];
            });
            assertEquals(-1, src.mismatch(dst));
            s[0].close();
            r[0].close();
            rs.close();
            rd.close();
        } finally {
            relay.interrupt();
            relay.join(10_000);
        }
        assertEquals(0, rc[0]);
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("[127.72.1.2/24, 127.72.2.2/24]"), out.toString());
    }
}

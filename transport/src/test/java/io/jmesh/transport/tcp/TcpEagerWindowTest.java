package io.jmesh.transport.tcp;

import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The NCCL driver's pattern on the TCP eager path, on one thread: a window of grouped receives (two buffers, tags 0
 * and 1) kept posted, the sender's messages alternating the tags, rounds of growing size across the threshold, so
 * that eager records run ahead of the clear-to-sends, fill receives, meet a full ring and mix with chunks in one
 * receive. Every byte and size is checked and nothing may stall.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpEagerWindowTest {
    private static final int GROUPS = 16;
    private static final int WINDOW = 8;

    @Test
    void groupedReceivesAcrossTheThresholdNeverStall() throws Exception {
        try (TcpProvider a = TcpTestSupport.provider("127.0.101.2/24");
             TcpProvider b = TcpTestSupport.provider("127.0.101.3/24");
             Arena arena = Arena.ofShared()) {
            TcpTestSupport.Pair p = TcpTestSupport.connect(a, b.listen());
            long max = 1 << 20;
            MemorySegment src = arena.allocate(2 * WINDOW * max, 4096);
            MemorySegment dst = arena.allocate(2 * WINDOW * max, 4096);
            Registration rs = a.register(src);
            Registration rd = b.register(dst);
            for (long size : new long[] {0, 4096, 16384, 65536, 262144, 1 << 20, 65536, 4096}) {
                for (int round = 0; round < 3; round++) {
                    exchange(p.sender(), p.receiver(), rs, rd, src, dst, size, round);
                }
            }
        }
    }

    private static void exchange(CoreSender s, CoreReceiver r, Registration rs, Registration rd, MemorySegment src,
                                 MemorySegment dst, long size, int round) {
        int messages = 2 * GROUPS;
        int[] sendIds = new int[messages];
        int[] recvIds = new int[GROUPS];
        int sent = 0;
        int sendDone = 0;
        int posted = 0;
        int recvDone = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        for (int m = 0; m < messages; m++) {
            long at = (m % (2 * WINDOW)) * size;
            for (long k = 0; k < size; k += 512) {
                src.set(ValueLayout.JAVA_BYTE, at + k, (byte) (m + round + k / 512));
            }
        }
        while (sendDone < messages || recvDone < GROUPS) {
            if (System.nanoTime() - deadline > 0) {
                fail("stalled at " + size + " bytes, round " + round + ": sent " + sent + " (done " + sendDone
                        + "), posted " + posted + " (done " + recvDone + "); " + s.error() + " / " + r.error());
            }
            if (posted < GROUPS && posted - recvDone < WINDOW) {
                long at = (posted % WINDOW) * 2 * size;
                int id = r.irecv(2, new Registration[] {rd, rd}, new long[] {at, at + size},
                        new long[] {size, size}, new int[] {0, 1});
                if (id >= 0) {
                    recvIds[posted++] = id;
                } else if (id != Status.NOT_READY) {
                    fail("irecv: " + Status.describe(id) + " " + r.error());
                }
            }
            if (sent < messages && sent - sendDone < 2 * WINDOW) {
                int id = s.isend(rs, (sent % (2 * WINDOW)) * size, size, sent % 2);
                if (id >= 0) {
                    sendIds[sent++] = id;
                } else if (id != Status.NOT_READY) {
                    fail("isend: " + Status.describe(id) + " " + s.error());
                }
            }
            if (sendDone < sent) {
                int t = s.test(sendIds[sendDone]);
                if (t == 1) {
                    sendDone++;
                } else if (t != 0) {
                    fail("send test: " + Status.describe(t) + " " + s.error());
                }
            }
            if (recvDone < posted) {
                int g = recvDone;
                int t = r.test(recvIds[g]);
                if (t == 1) {
                    long at = (g % WINDOW) * 2 * size;
                    for (int i = 0; i < 2; i++) {
                        int m = 2 * g + i;
                        assertEquals(size, r.size(recvIds[g], i), "size of message " + m);
                        long from = (m % (2 * WINDOW)) * size;
                        for (long k = 0; k < size; k += 512) {
                            assertEquals(src.get(ValueLayout.JAVA_BYTE, from + k),
                                    dst.get(ValueLayout.JAVA_BYTE, at + i * size + k), "message " + m + " byte " + k);
                        }
                    }
                    recvDone++;
                } else if (t != 0) {
                    fail("recv test: " + Status.describe(t) + " " + r.error());
                }
            }
        }
    }
}

package io.jmesh.transport.tcp;

import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Status;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The data path allocates nothing in steady state: 10,000 irecv/isend/test round trips, or one-sided writes and
 * reads, on one thread, after a warm-up, allocate less than {@value #BUDGET_PER_MESSAGE} bytes per message on
 * average. This counts bytes, not time.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpAllocationTest {
    private static final int BUDGET_PER_MESSAGE = 16;
    private static final int WARMUP = 3_000;
    private static final int MEASURED = 10_000;

    /** The per-thread allocation counter, or the test is skipped (saying why) where the JVM has none. */
    private static Method allocationCounter(Object bean) throws Exception {
        // com.sun.management is not read by this module at compile time; reflection reads it at run time
        try {
            Class<?> type = Class.forName("com.sun.management.ThreadMXBean");
            Assumptions.assumeTrue(type.isInstance(bean)
                    && (boolean) type.getMethod("isThreadAllocatedMemorySupported").invoke(bean)
                    && (boolean) type.getMethod("isThreadAllocatedMemoryEnabled").invoke(bean),
                    "per-thread allocation counting is not available on this JVM");
            return type.getMethod("getCurrentThreadAllocatedBytes");
        } catch (ClassNotFoundException e) {
            Assumptions.abort("com.sun.management is not available on this JVM");
            return null;
        }
    }

    @Test
    void steadyStateSendAndReceiveAllocateNothing() throws Exception {
        Object bean = ManagementFactory.getThreadMXBean();
        Method allocated = allocationCounter(bean);
        try (TcpProvider a = TcpTestSupport.provider("127.0.101.2/24");
             TcpProvider b = TcpTestSupport.provider("127.0.101.3/24");
             Arena arena = Arena.ofShared()) {
            TcpTestSupport.Pair p = TcpTestSupport.connect(a, b.listen());
            MemorySegment src = arena.allocate(1 << 20, 4096);
            MemorySegment dst = arena.allocate(1 << 20, 4096);
            Registration rs = a.register(src);
            Registration rd = b.register(dst);
            Registration[] regs = {rd};
            long[] offsets = {0};
            long[] max = {1 << 20};
            int[] tags = {0};
            long[] sizes = {0, 1, 4096, 70_000, 300_000};
            roundTrips(p, rs, regs, offsets, max, tags, sizes, WARMUP);
            long before = (long) allocated.invoke(bean);
            roundTrips(p, rs, regs, offsets, max, tags, sizes, MEASURED);
            long bytes = (long) allocated.invoke(bean) - before;
            System.out.printf("TcpAllocationTest: %d bytes allocated for %d messages (%.2f per message)%n", bytes,
                    MEASURED, (double) bytes / MEASURED);
            assertTrue(bytes < (long) BUDGET_PER_MESSAGE * MEASURED, bytes + " bytes allocated for " + MEASURED
                    + " messages (" + (double) bytes / MEASURED + " per message)");
        }
    }

    /**
     * One-sided writes and reads, the owner polled on the same thread: 10,000 operations after a warm-up allocate less
     * than {@value #BUDGET_PER_MESSAGE} bytes each on average.
     */
    @Test
    void steadyStateWritesAndReadsAllocateNothing() throws Exception {
        Object bean = ManagementFactory.getThreadMXBean();
        Method allocated = allocationCounter(bean);
        try (TcpProvider a = TcpTestSupport.provider("127.0.101.2/24");
             TcpProvider b = TcpTestSupport.provider("127.0.101.3/24");
             Arena arena = Arena.ofShared()) {
            TcpTestSupport.Pair p = TcpTestSupport.connect(a, b.listen());
            Registration local = a.register(arena.allocate(1 << 20, 4096));
            RemoteRegion remote = b.register(arena.allocate(1 << 20, 4096)).remote();
            long[] sizes = {0, 1, 4096, 70_000, 600_000};
            operations(p, local, remote, sizes, WARMUP);
            long before = (long) allocated.invoke(bean);
            operations(p, local, remote, sizes, MEASURED);
            long bytes = (long) allocated.invoke(bean) - before;
            System.out.printf("TcpAllocationTest: %d bytes allocated for %d one-sided operations (%.2f per "
                    + "operation)%n", bytes, MEASURED, (double) bytes / MEASURED);
            assertTrue(bytes < (long) BUDGET_PER_MESSAGE * MEASURED, bytes + " bytes allocated for " + MEASURED
                    + " one-sided operations (" + (double) bytes / MEASURED + " per operation)");
        }
    }

    private static void operations(TcpTestSupport.Pair p, Registration local, RemoteRegion remote, long[] sizes,
                                   int count) {
        CoreSender s = p.sender();
        CoreReceiver r = p.receiver();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TcpTestSupport.PATIENCE_MS);
        for (int i = 0; i < count; i++) {
            long size = sizes[i % sizes.length];
            int req = (i & 1) == 0 ? s.write(local, 0, size, remote, 1000) : s.read(local, 0, size, remote, 1000);
            if (req < 0) {
                fail("operation " + i + ": " + Status.describe(req) + " " + s.error());
            }
            int t;
            while ((t = s.test(req)) == 0) {
                r.poll();
                check(deadline);
            }
            if (t != 1) {
                fail("operation " + i + ": " + Status.describe(t) + " " + s.failure(req));
            }
        }
    }

    /** Plain loops, no lambdas or boxing, so the test itself allocates nothing per message. */
    private static void roundTrips(TcpTestSupport.Pair p, Registration rs, Registration[] regs, long[] offsets,
                                   long[] max, int[] tags, long[] sizes, int count) {
        CoreSender s = p.sender();
        CoreReceiver r = p.receiver();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TcpTestSupport.PATIENCE_MS);
        for (int i = 0; i < count; i++) {
            long size = sizes[i % sizes.length];
            tags[0] = i;
            int rr = r.irecv(1, regs, offsets, max, tags);
            if (rr < 0) {
                fail("irecv: " + Status.describe(rr) + " " + r.error());
            }
            int sr;
            while ((sr = s.isend(rs, 0, size, i)) == Status.NOT_READY) {
                check(deadline);
            }
            if (sr < 0) {
                fail("isend: " + Status.describe(sr) + " " + s.error());
            }
            int st = 0;
            int rt = 0;
            while (st == 0 || rt == 0) {
                if (st == 0) {
                    st = s.test(sr);
                }
                if (rt == 0) {
                    rt = r.test(rr);
                }
                if (st < 0 || rt < 0) {
                    fail("test: " + s.error() + " / " + r.error());
                }
                check(deadline);
            }
            if (r.size(rr, 0) != size) {
                assertEquals(size, r.size(rr, 0));
            }
        }
    }

    private static void check(long deadline) {
        if (System.nanoTime() - deadline > 0) {
            fail("round trips did not finish within " + TcpTestSupport.PATIENCE_MS + " ms (a hang)");
        }
    }
}

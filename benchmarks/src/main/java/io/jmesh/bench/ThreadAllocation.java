package io.jmesh.bench;

import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;

/**
 * The bytes allocated by the benchmark thread alone, per operation, as a secondary result
 * ({@code :hotPathBytesPerOp}). {@code -prof gc}'s gc.alloc.rate.norm counts every thread of the JVM (JMH's own, the
 * transport's handshake thread), which at a few operations per second (64 MiB messages) dominates the figure; this
 * counter isolates the thread that runs isend/irecv/test. The benchmark calls {@link #op()} once per operation.
 */
@State(Scope.Thread)
@AuxCounters(AuxCounters.Type.EVENTS)
public class ThreadAllocation {
    private static final Object BEAN = ManagementFactory.getThreadMXBean();
    private static final Method ALLOCATED = method();

    /** Bytes per operation allocated by the benchmark thread in the last iteration; -1 when the JVM cannot tell. */
    public double hotPathBytesPerOp;

    private long ops;
    private long start;

    private static Method method() {
        try {
            Class<?> type = Class.forName("com.sun.management.ThreadMXBean");
            return type.isInstance(BEAN) ? type.getMethod("getCurrentThreadAllocatedBytes") : null;
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    private static long allocated() {
        try {
            return ALLOCATED == null ? -1 : (long) ALLOCATED.invoke(BEAN);
        } catch (ReflectiveOperationException e) {
            return -1;
        }
    }

    @Setup(Level.Iteration)
    public void begin() {
        ops = 0;
        hotPathBytesPerOp = 0;
        start = allocated();
    }

    void op() {
        ops++;
    }

    @TearDown(Level.Iteration)
    public void end() {
        long now = allocated();
        hotPathBytesPerOp = start < 0 || now < 0 || ops == 0 ? -1 : (double) (now - start) / ops;
    }
}

package io.jmesh.verbs;

import io.jmesh.posix.Errno;
import io.jmesh.verbs.ffi.ibv_async_event;
import io.jmesh.verbs.ffi.ibv_context;
import io.jmesh.verbs.ffi.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * A device's asynchronous events (port up or down, a queue pair or completion queue in error, a fatal device error)
 * without blocking a thread in {@code ibv_get_async_event}: the context's {@code async_fd} is made non-blocking and
 * waited on with {@code poll(2)} together with the other devices' descriptors, so a reader can stop at any time and
 * close the contexts afterwards. The libc calls ({@code fcntl}, {@code poll}) are bound here with errno captured.
 *
 * <pre>{@code
 * int fd = AsyncEvents.fd(context);
 * AsyncEvents.nonBlocking(fd, "rxe0");
 * MemorySegment event = AsyncEvents.allocateEvent(arena);
 * if (AsyncEvents.poll(fds, 1, 100) > 0 && AsyncEvents.next(context, event) == 0) {
 *     int type = AsyncEvents.type(event);  ...  AsyncEvents.ack(event);
 * }
 * }</pre>
 */
public final class AsyncEvents {
    /** {@code struct pollfd}: int fd, short events, short revents. */
    public static final StructLayout POLLFD = MemoryLayout.structLayout(ValueLayout.JAVA_INT.withName("fd"),
            ValueLayout.JAVA_SHORT.withName("events"), ValueLayout.JAVA_SHORT.withName("revents"));
    public static final short POLLIN = 1;
    private static final int F_GETFL = 3;
    private static final int F_SETFL = 4;
    /** The same on x86_64 and aarch64 Linux (asm-generic). */
    private static final int O_NONBLOCK = 0x800;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle FCNTL = libc("fcntl", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle POLL = libc("poll", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
    private static final MethodHandle GET_EVENT = LINKER.downcallHandle(verbs_h.ibv_get_async_event$address(),
            verbs_h.ibv_get_async_event$descriptor(), Linker.Option.captureCallState("errno"));

    private AsyncEvents() {
    }

    private static MethodHandle libc(String name, FunctionDescriptor d, Linker.Option... more) {
        Linker.Option[] options = new Linker.Option[more.length + 1];
        options[0] = Linker.Option.captureCallState("errno");
        System.arraycopy(more, 0, options, 1, more.length);
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), d, options);
    }

    /** The context's async event descriptor. */
    public static int fd(MemorySegment context) {
        return ibv_context.async_fd(context.reinterpret(ibv_context.sizeof()));
    }

    /**
     * Makes the descriptor non-blocking, so {@link #next} answers EAGAIN instead of waiting.
     *
     * @throws VerbsException naming the device and the errno
     */
    public static void nonBlocking(int fd, String device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(Errno.CAPTURE_LAYOUT);
            int flags = (int) FCNTL.invokeExact(capture, fd, F_GETFL, 0);
            if (flags < 0 || (int) FCNTL.invokeExact(capture, fd, F_SETFL, flags | O_NONBLOCK) < 0) {
                int errno = Errno.read(capture);
                throw new VerbsException("fcntl(O_NONBLOCK) on the async event descriptor of " + device + " failed: "
                        + Errno.describe(errno), errno);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * {@code poll(2)} on {@code n} {@link #POLLFD} entries; an interrupted wait counts as no event.
     *
     * @return the number of entries with events, 0 on timeout or EINTR, or -errno
     */
    public static int poll(MemorySegment fds, int n, int timeoutMillis) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(Errno.CAPTURE_LAYOUT);
            int rc = (int) POLL.invokeExact(capture, fds, (long) n, timeoutMillis);
            if (rc >= 0) {
                return rc;
            }
            int errno = Errno.read(capture);
            return errno == Errno.EINTR ? 0 : -errno;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    public static MemorySegment allocateEvent(Arena arena) {
        return ibv_async_event.allocate(arena);
    }

    /**
     * {@code ibv_get_async_event} on a non-blocking context: 0 with the event in {@code event} (acknowledge it with
     * {@link #ack}), or the errno (EAGAIN: none pending).
     */
    public static int next(MemorySegment context, MemorySegment event) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(Errno.CAPTURE_LAYOUT);
            int rc = (int) GET_EVENT.invokeExact(capture, context, event);
            return rc == 0 ? 0 : Errno.read(capture);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Every event taken must be acknowledged, or destroying its QP or CQ waits forever. */
    public static void ack(MemorySegment event) {
        verbs_h.ibv_ack_async_event(event);
    }

    public static int type(MemorySegment event) {
        return ibv_async_event.event_type(event);
    }

    /** The queue pair an event concerns (QP events only). */
    public static MemorySegment qp(MemorySegment event) {
        return ibv_async_event.element.qp(ibv_async_event.element(event));
    }

    /** The completion queue an event concerns (CQ events only). */
    public static MemorySegment cq(MemorySegment event) {
        return ibv_async_event.element.cq(ibv_async_event.element(event));
    }

    /** The port an event concerns (port events only). */
    public static int port(MemorySegment event) {
        return ibv_async_event.element.port_num(ibv_async_event.element(event));
    }

    /** libibverbs' name of an event type, e.g. "port error". */
    public static String describe(int type) {
        return verbs_h.ibv_event_type_str(type).getString(0);
    }
}

package io.jmesh.transport.tcp;

import io.jmesh.posix.Errno;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.channels.SocketChannel;
import java.util.Optional;

/**
 * One direction of a relayed socket moved by Linux's {@code splice(2)}: socket to pipe, pipe to socket, the bytes
 * never copied into this process. A relay that copies reads every byte into user space and writes it out again, two
 * copies on the relay node's CPUs for every byte that crosses it; splicing moves page references instead (about half
 * the relay thread's CPU per byte on loopback TCP, measured before this class was written).
 *
 * <p>NIO keeps a channel's file descriptor to itself; it hands it over only when {@code java.base} exports
 * {@code sun.nio.ch} to jmesh ({@code --add-exports java.base/sun.nio.ch=ALL-UNNAMED}, which jmesh's launchers and the
 * NCCL plugin's JVM pass). Without it, or off Linux, {@link #UNAVAILABLE} says why and the relay copies as before.
 *
 * <p>A pipe holds what its source gave and its sink has not yet taken: it is the bounded buffer of the copying relay,
 * so back-pressure works the same (a full pipe stops reading the source). One owner, the splice worker's thread;
 * {@link #close} frees both descriptors.
 */
final class KernelPipe implements AutoCloseable {
    /** The size the pipe asks for; Linux may grant less (a user over {@code pipe-user-pages-soft} gets one page). */
    static final int CAPACITY = Splice.BUFFER_BYTES;

    private static final int SPLICE_F_MOVE = 1;
    private static final int SPLICE_F_NONBLOCK = 2;
    private static final int O_CLOEXEC = 0x80000;
    private static final int F_SETPIPE_SZ = 1031;
    private static final int EPIPE = 32;
    private static final int ECONNRESET = 104;

    private static final MethodHandle SPLICE;
    private static final MethodHandle PIPE2;
    private static final MethodHandle FCNTL;
    private static final MethodHandle CLOSE;
    private static final MethodHandle FD_VAL;
    /** Why the relay copies instead, or null when it can splice. */
    static final String UNAVAILABLE;

    static {
        MethodHandle splice = null, pipe2 = null, fcntl = null, close = null, fdVal = null;
        String why = null;
        if (!System.getProperty("os.name", "").startsWith("Linux")) {
            why = "splice(2) is Linux's";
        } else {
            try {
                Linker linker = Linker.nativeLinker();
                SymbolLookup libc = linker.defaultLookup();
                Linker.Option errno = Linker.Option.captureCallState("errno");
                splice = linker.downcallHandle(find(libc, "splice"), FunctionDescriptor.of(ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                        ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT), errno);
                pipe2 = linker.downcallHandle(find(libc, "pipe2"),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT), errno);
                fcntl = linker.downcallHandle(find(libc, "fcntl"), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), Linker.Option.firstVariadicArg(2));
                close = linker.downcallHandle(find(libc, "close"),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
                Class<?> selCh = Class.forName("sun.nio.ch.SelChImpl");
                fdVal = MethodHandles.lookup().findVirtual(selCh, "getFDVal", MethodType.methodType(int.class))
                        .asType(MethodType.methodType(int.class, SocketChannel.class));
            } catch (IllegalAccessException e) {
                why = "java.base does not export sun.nio.ch to jmesh, so NIO keeps the sockets' descriptors (start the "
                        + "JVM with --add-exports java.base/sun.nio.ch=ALL-UNNAMED to let the relay splice)";
            } catch (ReflectiveOperationException | RuntimeException e) {
                why = "cannot bind splice(2) or read a socket's descriptor: " + e;
            }
        }
        UNAVAILABLE = why;
        SPLICE = splice;
        PIPE2 = pipe2;
        FCNTL = fcntl;
        CLOSE = close;
        FD_VAL = fdVal;
    }

    private static MemorySegment find(SymbolLookup libc, String name) {
        Optional<MemorySegment> s = libc.find(name);
        return s.orElseThrow(() -> new IllegalStateException("the C library has no " + name));
    }

    private final Arena arena = Arena.ofShared();
    private final MemorySegment state = arena.allocate(Errno.CAPTURE_LAYOUT);
    private final int readEnd;
    private final int writeEnd;
    private final int capacity;
    /** Bytes in the pipe: taken from the source, not yet given to the sink. */
    private long held;
    private boolean closed;

    private KernelPipe(int readEnd, int writeEnd, int capacity) {
        this.readEnd = readEnd;
        this.writeEnd = writeEnd;
        this.capacity = capacity;
    }

    /** A new pipe of up to {@link #CAPACITY} bytes; only when {@link #UNAVAILABLE} is null. */
    static KernelPipe open() throws IOException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment fds = a.allocate(ValueLayout.JAVA_INT, 2);
            MemorySegment st = a.allocate(Errno.CAPTURE_LAYOUT);
            if ((int) PIPE2.invokeExact(st, fds, O_CLOEXEC) != 0) {
                throw new IOException("cannot make a pipe for the relay: " + Errno.describe(Errno.read(st))
                        + "; the relay copies this socket instead");
            }
            int r = fds.getAtIndex(ValueLayout.JAVA_INT, 0);
            int w = fds.getAtIndex(ValueLayout.JAVA_INT, 1);
            try {
                // refused above pipe-max-size or the user's pipe pages: the pipe keeps its default (16 pages)
                int size = (int) FCNTL.invokeExact(w, F_SETPIPE_SZ, CAPACITY);
                return new KernelPipe(r, w, size > 0 ? size : 65536);
            } catch (Throwable t) {
                closeFd(r); // the pipe exists but no KernelPipe owns it yet
                closeFd(w);
                throw t;
            }
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("cannot make a pipe for the relay: " + t, t);
        }
    }

    /** The descriptor of a socket channel, for {@link #fill} and {@link #drain}. */
    static int fd(SocketChannel ch) throws IOException {
        try {
            return (int) FD_VAL.invokeExact(ch);
        } catch (Throwable t) {
            throw new IOException("cannot read the descriptor of " + ch + ": " + t, t);
        }
    }

    boolean isEmpty() {
        return held == 0;
    }

    boolean hasRoom() {
        return held < capacity;
    }

    /** Moves what {@code from} has, up to the pipe's room: the bytes moved, 0 when it has none now, -1 at its end. */
    long fill(int from) throws IOException {
        if (held >= capacity) {
            return 0; // a splice of 0 bytes would read as the end of the stream
        }
        long n = splice(from, writeEnd, capacity - held, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            held += n;
        }
        return n == 0 ? -1 : Math.max(n, 0);
    }

    /** Gives {@code to} what it takes of the pipe's bytes: the bytes moved, 0 when it takes none now. */
    long drain(int to) throws IOException {
        if (held == 0) {
            return 0;
        }
        // no SPLICE_F_MORE: it corks TCP's last partial segment until more comes, and a message's tail must go now
        long n = splice(readEnd, to, held, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            held -= n;
        }
        return Math.max(n, 0);
    }

    /** One splice: its count, or -2 when it would block; errors as NIO words them, so callers read them alike. */
    private long splice(int in, int out, long bytes, int flags) throws IOException {
        long n;
        try {
            n = (long) SPLICE.invokeExact(state, in, MemorySegment.NULL, out, MemorySegment.NULL, bytes, flags);
        } catch (Throwable t) {
            throw new IOException("splice failed: " + t, t);
        }
        if (n >= 0) {
            return n;
        }
        int errno = Errno.read(state);
        return switch (errno) {
            case Errno.EAGAIN, Errno.EINTR -> -2;
            case EPIPE -> throw new IOException("Broken pipe");
            case ECONNRESET -> throw new IOException("Connection reset");
            default -> throw new IOException("splice: " + Errno.describe(errno));
        };
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeFd(readEnd);
        closeFd(writeEnd);
        arena.close();
    }

    private static void closeFd(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable ignored) {
            // close(2) on our own descriptor: nothing a caller could do
        }
    }
}

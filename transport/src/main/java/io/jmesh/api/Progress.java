package io.jmesh.api;

import org.apache.logging.log4j.Logger;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The {@link CompletableFuture} face of the poll-style data path: one agent thread (a duty cycle, as in Agrona)
 * issues the operations handed to it, retries them while they are {@link Status#NOT_READY}, tests them, and
 * completes their futures; it spins, then yields, then parks (1 µs doubling to 1 ms) while there is nothing to do.
 * Works with any provider.
 *
 * <pre>{@code
 * try (Progress progress = Progress.start()) {
 *     progress.serve(receiver);                          // TCP: lets the peer's one-sided operations complete
 *     CompletableFuture<long[]> got = progress.recv(receiver, 1, new Registration[] {in}, new long[] {0},
 *             new long[] {in.length()}, new int[] {7});
 *     CompletableFuture<Long> sent = progress.send(sender, out, 0, 4096, 7);
 *     long bytes = got.join()[0];                        // or thenAccept(...), allOf(...), ...
 *     progress.write(sender, out, 0, 4096, peerRegion, 0).join();
 * }                                                      // then close the connections, registrations, fabric
 * }</pre>
 *
 * <p>Rules:
 * <ul>
 * <li>A sender or receiver handed to the agent belongs to it: no other thread may call it (the data path is one
 *     thread at a time per connection) until the agent is closed. Operations on one connection are issued in the
 *     order they were handed over, so they also complete in that order.
 * <li>Futures complete on the agent thread, after its own bookkeeping is done: dependent stages added with
 *     {@code thenApply} and the like run there too, so they must not block (never {@code join()} another of this
 *     agent's futures in one); use the {@code ...Async} variants for slow work. They may hand the agent new work.
 * <li>A failure completes the future exceptionally with a {@link TransferException}: the connection's {@code
 *     error()}, the peer's reason for refusing a one-sided operation, or a bad argument.
 * <li>{@link #close()} stops the agent and fails the futures still pending with {@link Status#CLOSED}; the
 *     connections stay open and the caller's, to be closed next.
 * <li>With the TCP provider the owner of memory that peers write or read one-sided must poll its receiver for those
 *     operations to complete (on verbs the NIC does it): {@link #serve} makes the agent do that.
 * </ul>
 */
public final class Progress implements AutoCloseable {
    private static final Logger LOG = JmeshLog.logger(Progress.class);
    private static final int SPINS = 100;
    private static final int YIELDS = 10;
    private static final long MIN_PARK_NANOS = 1_000;
    private static final long MAX_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** While requests are pending a completion may come any moment: parks stay short. */
    private static final long MAX_PARK_NANOS_BUSY = MAX_PARK_NANOS / 20;

    private enum Kind { SEND, RECV, WRITE, READ, FLUSH, SERVE }

    /** One operation: what to issue, then its request id, then its future. Touched by the agent thread only. */
    private static final class Op {
        final Kind kind;
        final Object connection;
        final Registration[] registrations;
        final long[] offsets;
        final long[] lengths;
        final int[] tags;
        final int n;
        final RemoteRegion remote;
        final long remoteOffset;
        final CompletableFuture<Object> future = new CompletableFuture<>();
        int request = -1;
        Object result;
        TransferException failure;

        Op(Kind kind, Object connection, int n, Registration[] registrations, long[] offsets, long[] lengths,
           int[] tags, RemoteRegion remote, long remoteOffset) {
            this.kind = kind;
            this.connection = connection;
            this.n = n;
            this.registrations = registrations;
            this.offsets = offsets;
            this.lengths = lengths;
            this.tags = tags;
            this.remote = remote;
            this.remoteOffset = remoteOffset;
        }

        /** The region without its keys: they are capabilities and stay out of messages and logs. */
        private String region() {
            return remote == null ? " of no region" : " of a " + remote.provider() + " region of " + remote.length()
                    + " bytes";
        }

        String describe() {
            return switch (kind) {
                case SEND -> "send of " + lengths[0] + " bytes at offset " + offsets[0] + " with tag " + tags[0];
                case RECV -> "receive of " + n + " buffer(s) with tags " + Arrays.toString(tags);
                case WRITE -> "one-sided write of " + lengths[0] + " bytes to offset " + remoteOffset + region();
                case READ -> "one-sided read of " + lengths[0] + " bytes from offset " + remoteOffset + region();
                case FLUSH -> "flush of " + n + " buffer(s)";
                case SERVE -> "serving " + connection;
            };
        }
    }

    private final ConcurrentLinkedQueue<Op> submitted = new ConcurrentLinkedQueue<>();
    /** Handed over, not yet issued (NOT_READY so far), in order. */
    private final ArrayDeque<Op> waiting = new ArrayDeque<>();
    /** Issued, being tested. */
    private final List<Op> inFlight = new ArrayList<>();
    private final List<Receiver> served = new ArrayList<>();
    /** Finished this duty cycle: completed after the bookkeeping, so callbacks see a consistent agent. */
    private final List<Op> finished = new ArrayList<>();
    private final List<Object> blocked = new ArrayList<>();
    private final Thread thread;
    /**
     * Idle with requests pending, and without. Whether any are pending changes only in a duty cycle that did work,
     * which resets both, so an idle stretch uses one of them throughout. Touched by the agent thread only.
     */
    private final IdleStrategy idleBusy = new BackoffIdleStrategy(SPINS, YIELDS, MIN_PARK_NANOS, MAX_PARK_NANOS_BUSY);
    private final IdleStrategy idleQuiet = new BackoffIdleStrategy(SPINS, YIELDS, MIN_PARK_NANOS, MAX_PARK_NANOS);
    private volatile boolean closed;

    private Progress(String name) {
        thread = Thread.ofPlatform().name(name).daemon(true).unstarted(this::run);
    }

    /** Starts an agent on a daemon thread named "jmesh-progress". */
    public static Progress start() {
        return start("jmesh-progress");
    }

    /** Starts an agent on a daemon thread with the given name. */
    public static Progress start(String threadName) {
        Progress p = new Progress(Objects.requireNonNull(threadName, "threadName"));
        p.thread.start();
        return p;
    }

    /**
     * Sends bytes [offset, offset + length) of {@code registration} to the receive the peer posted with {@code tag}
     * (retried while the peer has not posted it).
     *
     * @return the bytes sent, once the send completed
     */
    public CompletableFuture<Long> send(Sender sender, Registration registration, long offset, long length, int tag) {
        Objects.requireNonNull(sender, "sender");
        return submit(new Op(Kind.SEND, sender, 1, new Registration[] {registration}, new long[] {offset},
                new long[] {length}, new int[] {tag}, null, 0));
    }

    /**
     * Posts a grouped receive of {@code n} buffers (see {@link Receiver#irecv}); the arrays are copied.
     *
     * @return the bytes received into each buffer, once the receive completed
     */
    public CompletableFuture<long[]> recv(Receiver receiver, int n, Registration[] registrations, long[] offsets,
                                         long[] maxSizes, int[] tags) {
        Objects.requireNonNull(receiver, "receiver");
        checkArrays(n, registrations, offsets, maxSizes);
        Objects.requireNonNull(tags, "tags");
        return submit(new Op(Kind.RECV, receiver, n, Arrays.copyOf(registrations, n), Arrays.copyOf(offsets, n),
                Arrays.copyOf(maxSizes, n), Arrays.copyOf(tags, n), null, 0));
    }

    /** One-sided write (see {@link Sender#write}); the future yields the bytes written once the owner applied them. */
    public CompletableFuture<Long> write(Sender sender, Registration local, long localOffset, long length,
                                        RemoteRegion remote, long remoteOffset) {
        Objects.requireNonNull(sender, "sender");
        return submit(new Op(Kind.WRITE, sender, 1, new Registration[] {local}, new long[] {localOffset},
                new long[] {length}, new int[1], remote, remoteOffset));
    }

    /** One-sided read (see {@link Sender#read}); the future yields the bytes read once they are in local memory. */
    public CompletableFuture<Long> read(Sender sender, Registration local, long localOffset, long length,
                                       RemoteRegion remote, long remoteOffset) {
        Objects.requireNonNull(sender, "sender");
        return submit(new Op(Kind.READ, sender, 1, new Registration[] {local}, new long[] {localOffset},
                new long[] {length}, new int[1], remote, remoteOffset));
    }

    /** Flushes received buffers (see {@link Receiver#iflush}); the arrays are copied. */
    public CompletableFuture<Void> flush(Receiver receiver, int n, Registration[] registrations, long[] offsets,
                                        long[] sizes) {
        Objects.requireNonNull(receiver, "receiver");
        checkArrays(n, registrations, offsets, sizes);
        return submit(new Op(Kind.FLUSH, receiver, n, Arrays.copyOf(registrations, n), Arrays.copyOf(offsets, n),
                Arrays.copyOf(sizes, n), new int[n], null, 0));
    }

    /**
     * Polls {@code receiver} every duty cycle ({@link Receiver#poll()}), so the peer's one-sided operations on this
     * node's memory complete over TCP even when no receive is posted. Stops when the agent closes or the connection
     * fails (logged); the future completes then (exceptionally when the connection failed).
     */
    public CompletableFuture<Void> serve(Receiver receiver) {
        Objects.requireNonNull(receiver, "receiver");
        return submit(new Op(Kind.SERVE, receiver, 0, null, null, null, null, null, 0));
    }

    private static void checkArrays(int n, Registration[] registrations, long[] offsets, long[] sizes) {
        Objects.requireNonNull(registrations, "registrations");
        Objects.requireNonNull(offsets, "offsets");
        Objects.requireNonNull(sizes, "sizes");
        if (n < 1 || n > Receiver.MAX_RECVS || registrations.length < n || offsets.length < n || sizes.length < n) {
            throw new IllegalArgumentException("n must be 1.." + Receiver.MAX_RECVS + " and every array at least n "
                    + "long; got n = " + n);
        }
    }

    @SuppressWarnings("unchecked")
    private <T> CompletableFuture<T> submit(Op op) {
        submitted.add(op);
        if (closed) {
            failSubmitted(); // the agent may have drained the queue for the last time already
        } else {
            LockSupport.unpark(thread);
        }
        return (CompletableFuture<T>) (CompletableFuture<?>) op.future;
    }

    private void run() {
        try {
            while (!closed) {
                int work = doWork();
                if (work > 0) {
                    idleBusy.reset();
                    idleQuiet.reset();
                } else if (!inFlight.isEmpty() || !waiting.isEmpty() || !served.isEmpty()) {
                    idleBusy.idle();
                } else {
                    idleQuiet.idle();
                }
            }
        } catch (Throwable t) {
            LOG.error("jmesh progress agent stopped by an unexpected error; pending futures fail", t);
            closed = true;
        } finally {
            failAll("the progress agent was closed before the operation completed");
        }
    }

    /** One duty cycle: take new work, issue what waits, test what is in flight, then complete futures. */
    private int doWork() {
        int work = 0;
        Op op;
        while ((op = submitted.poll()) != null) {
            if (op.kind == Kind.SERVE) {
                served.add((Receiver) op.connection);
                inFlight.add(op);
            } else {
                waiting.add(op);
            }
            work++;
        }
        work += issue();
        for (Receiver r : served) {
            r.poll();
        }
        for (int i = 0; i < inFlight.size(); i++) {
            Op o = inFlight.get(i);
            if (test(o)) {
                inFlight.set(i, inFlight.getLast());
                inFlight.removeLast();
                i--;
                if (o.kind == Kind.SERVE) {
                    served.remove((Receiver) o.connection);
                }
                finished.add(o);
            }
        }
        work += finished.size();
        completeFinished();
        return work;
    }

    /** Issues waiting operations in order; a connection that answered NOT_READY takes no more this cycle. */
    private int issue() {
        int issued = 0;
        blocked.clear();
        for (var it = waiting.iterator(); it.hasNext(); ) {
            Op o = it.next();
            if (isBlocked(o.connection)) {
                continue;
            }
            int r = start(o);
            if (r == Status.NOT_READY) {
                blocked.add(o.connection);
                continue;
            }
            it.remove();
            issued++;
            if (r >= 0) {
                o.request = r;
                inFlight.add(o);
            } else {
                o.failure = failure(o, r);
                finished.add(o);
            }
        }
        return issued;
    }

    private boolean isBlocked(Object connection) {
        for (Object c : blocked) {
            if (c == connection) {
                return true;
            }
        }
        return false;
    }

    private static int start(Op o) {
        return switch (o.kind) {
            case SEND -> ((Sender) o.connection).isend(o.registrations[0], o.offsets[0], o.lengths[0], o.tags[0]);
            case RECV -> ((Receiver) o.connection).irecv(o.n, o.registrations, o.offsets, o.lengths, o.tags);
            case WRITE -> ((Sender) o.connection).write(o.registrations[0], o.offsets[0], o.lengths[0], o.remote,
                    o.remoteOffset);
            case READ -> ((Sender) o.connection).read(o.registrations[0], o.offsets[0], o.lengths[0], o.remote,
                    o.remoteOffset);
            case FLUSH -> ((Receiver) o.connection).iflush(o.n, o.registrations, o.offsets, o.lengths);
            case SERVE -> throw new IllegalStateException("serve is not issued");
        };
    }

    /** Tests an issued operation; true when it is over (result or failure set). */
    private static boolean test(Op o) {
        if (o.kind == Kind.SERVE) {
            String error = ((Receiver) o.connection).error();
            if (error != null) {
                LOG.warn("jmesh progress: stopped serving {}: {}", o.connection, error);
                o.failure = new TransferException(Status.FAILED, error);
                return true;
            }
            return false;
        }
        int t = o.connection instanceof Sender s ? s.test(o.request) : ((Receiver) o.connection).test(o.request);
        if (t == 0) {
            return false;
        }
        if (t < 0) {
            o.failure = failure(o, t);
            return true;
        }
        o.result = switch (o.kind) {
            case SEND, WRITE, READ -> ((Sender) o.connection).size(o.request);
            case RECV -> {
                long[] sizes = new long[o.n];
                for (int i = 0; i < o.n; i++) {
                    sizes[i] = ((Receiver) o.connection).size(o.request, i);
                }
                yield sizes;
            }
            default -> null;
        };
        return true;
    }

    /** The exception for a failed operation: the reason the connection (or the peer) gave, and what failed. */
    private static TransferException failure(Op o, int status) {
        String why = switch (status) {
            case Status.REFUSED -> o.connection instanceof Sender s ? s.failure(o.request) : null;
            case Status.FAILED -> o.connection instanceof Sender s ? s.error() : ((Receiver) o.connection).error();
            case Status.CLOSED -> "the connection was closed";
            case Status.BAD_ARGUMENT -> "a bad argument (a range outside its registration, a closed registration, "
                    + "a registration or region of another provider, too many buffers)";
            case Status.TRUNCATED -> "the message is larger than the buffer the receiver posted for its tag";
            default -> null;
        };
        return new TransferException(status, o.describe() + " failed: " + (why != null ? why
                : Status.describe(status)));
    }

    private void completeFinished() {
        if (finished.isEmpty()) {
            return;
        }
        // the lists are consistent before any user code runs; callbacks may hand over new work (it is queued)
        Op[] done = finished.toArray(new Op[0]);
        finished.clear();
        for (Op o : done) {
            if (o.failure != null) {
                o.future.completeExceptionally(o.failure);
            } else {
                o.future.complete(o.result);
            }
        }
    }

    private void failSubmitted() {
        Op op;
        while ((op = submitted.poll()) != null) {
            op.future.completeExceptionally(new TransferException(Status.CLOSED,
                    op.describe() + ": the progress agent was closed before the operation was issued"));
        }
    }

    private void failAll(String why) {
        List<Op> pending = new ArrayList<>(waiting);
        pending.addAll(inFlight);
        waiting.clear();
        inFlight.clear();
        served.clear();
        for (Op o : pending) {
            o.future.completeExceptionally(new TransferException(Status.CLOSED, o.describe() + ": " + why));
        }
        failSubmitted();
    }

    /** True until {@link #close()}. */
    public boolean isRunning() {
        return !closed && thread.isAlive();
    }

    /**
     * Stops the agent, waits for its thread, and fails every pending future with {@link Status#CLOSED}. Requests
     * already issued stay in flight on their connections: close those next. Called from a callback on the agent
     * thread, it stops the agent without waiting.
     */
    @Override
    public void close() {
        closed = true;
        LockSupport.unpark(thread);
        if (Thread.currentThread() != thread) {
            boolean interrupted = false;
            while (thread.isAlive()) {
                try {
                    thread.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            failSubmitted();
        }
    }

    @Override
    public String toString() {
        return "Progress[" + thread.getName() + (closed ? ", closed" : "") + "]";
    }
}

package io.jmesh.api.contract;

import io.jmesh.api.Connector;
import io.jmesh.api.Fabric;
import io.jmesh.api.Listener;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What the contract suite ({@link SenderReceiverContract}) stands on, through the public API only: one fabric per
 * class that listens and connects to itself, so both ends of a connection live in this JVM and one thread drives
 * them; a fresh connection per test, so a test that fails (or fails its connection on purpose) leaves nothing behind;
 * three class-wide registrations; and waits that end in a failure naming what did not happen after {@link
 * #patience()}. A provider's subclass opens its fabric and answers the few questions where providers differ.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 5, unit = TimeUnit.MINUTES) // a backstop only: every wait below has its own, shorter deadline
public abstract class ContractFixture {
    protected static final long MIB = 1 << 20;
    /** Bytes of each class-wide buffer: the largest message of the suite with room for guard bytes around it. */
    protected static final long BUFFER = 8 * MIB;
    /** Bytes the tests fill around a transfer's range, to show that nothing is written outside it. */
    protected static final byte GUARD = 0x5A;

    /** How a provider answers a one-sided operation that its owner cannot serve. */
    protected enum OwnerRefusal {
        /** TCP: the owner's receiver checks each request: {@code test} answers REFUSED, the connection stays up. */
        REFUSED_CONNECTION_KEPT,
        /** Verbs: the owner's NIC rejects the access (a remote access error) and the connection fails. */
        CONNECTION_FAILS
    }

    protected Fabric fabric;
    protected Listener listener;
    protected Arena arena;
    /** Class-wide memory: what is sent or written from, what is received or written into, what is read back into. */
    protected MemorySegment src;
    protected MemorySegment dst;
    protected MemorySegment back;
    protected Registration srcReg;
    protected Registration dstReg;
    protected Registration backReg;
    /** This test's connection: both of its ends. */
    protected Sender sender;
    protected Receiver receiver;
    private final List<AutoCloseable> apart = new ArrayList<>();

    /** Opens the fabric under test; it listens and connects to itself. Skips the class where it cannot run. */
    protected abstract Fabric openFabric() throws Exception;

    /**
     * The bound of every wait: it turns a hang into a failure and is no speed check. 30 s; a provider on slow
     * hardware (the emulated testbed) gives more.
     */
    protected Duration patience() {
        return Duration.ofSeconds(30);
    }

    /**
     * How long a test watches for something that must not happen (a send matched before its receive is known): long
     * enough for a clear-to-send to cross the connection many times over, on either provider.
     */
    protected Duration quietPeriod() {
        return Duration.ofMillis(200);
    }

    /**
     * Whether {@code Sender.test} reports every request of a connection in issue order, whatever its kind (TCP);
     * otherwise only requests of one kind are (verbs: a write may test 1 before an earlier send).
     */
    protected abstract boolean reportsAllKindsInIssueOrder();

    /**
     * Whether receives posted with {@code Receiver.MORE} stay unknown to the sender until released (verbs: their
     * clear-to-send entries leave in one write later); otherwise each is announced at once (TCP) or fetched by a
     * sender that needs it (verbs with the eager path).
     */
    protected abstract boolean holdsReceivesPostedWithMore();

    /**
     * Whether small messages go eagerly, before their receive is posted (verbs: into the receiver's ring); otherwise
     * every isend waits for its receive (TCP).
     */
    protected abstract boolean sendsSmallMessagesEagerly();

    /**
     * Whether the owner's part of a one-sided operation happens only while its application polls the receiver
     * (TCP); otherwise the owner's NIC does it alone (verbs).
     */
    protected abstract boolean ownerServesOnlyWhilePolled();

    protected abstract OwnerRefusal ownerRefusal();

    @BeforeAll
    final void openAndRegister() throws Exception {
        fabric = openFabric();
        listener = fabric.listen();
        arena = Arena.ofShared();
        src = arena.allocate(BUFFER, 4096);
        dst = arena.allocate(BUFFER, 4096);
        back = arena.allocate(BUFFER, 4096);
        srcReg = fabric.register(src);
        dstReg = fabric.register(dst);
        backReg = fabric.register(back);
    }

    @BeforeEach
    final void connectToItself() throws Exception {
        Connector c = fabric.connect(listener.handle());
        Sender[] s = new Sender[1];
        Receiver[] r = new Receiver[1];
        await("connect to this fabric's own listener over " + c.route(), () -> {
            if (s[0] == null) {
                s[0] = c.poll();
            }
            if (r[0] == null) {
                r[0] = listener.accept();
            }
            return s[0] != null && r[0] != null;
        });
        sender = s[0];
        receiver = r[0];
        dst.fill(GUARD);
        back.fill(GUARD);
    }

    @AfterEach
    final void disconnect() {
        List<AutoCloseable> all = new ArrayList<>(Arrays.asList(sender, receiver));
        all.addAll(apart);
        apart.clear();
        closeAll(all.toArray(AutoCloseable[]::new));
        sender = null;
        receiver = null;
    }

    @AfterAll
    final void closeInOrder() {
        closeAll(backReg, dstReg, srcReg, listener, fabric, arena);
    }

    /** Closes each in turn, all of them even when one fails; rethrows the first failure with the rest suppressed. */
    private static void closeAll(AutoCloseable... all) {
        RuntimeException first = null;
        for (AutoCloseable c : all) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                if (first == null) {
                    first = e instanceof RuntimeException re ? re : new IllegalStateException(e);
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** Polls until {@code condition} holds; fails naming {@code what} after {@link #patience()}. */
    protected final void await(String what, BooleanSupplier condition) {
        long end = System.nanoTime() + patience().toNanos();
        long spins = 0;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                fail("not within " + patience().toSeconds() + " s: " + what);
            }
            if (++spins % 1024 == 0) {
                Thread.yield();
            }
        }
    }

    /** Calls {@code call} for {@link #quietPeriod()} (and at least 100 times); every answer must be NOT_READY. */
    protected final void assertNotReadyFor(IntSupplier call, String what) {
        long end = System.nanoTime() + quietPeriod().toNanos();
        int calls = 0;
        while (calls < 100 || System.nanoTime() - end < 0) {
            int r = call.getAsInt();
            assertEquals(Status.NOT_READY, r, what + " (call " + calls + " answered " + Status.describe(r) + ")");
            calls++;
            LockSupport.parkNanos(100_000);
        }
    }

    /** isend, again while it answers NOT_READY; returns the request id or the other status it answered. */
    protected final int sendWhenReady(Registration reg, long offset, long length, int tag) {
        int[] req = new int[1];
        await("isend of " + length + " bytes with tag " + tag + " (no clear-to-send)", () -> {
            req[0] = sender.isend(reg, offset, length, tag);
            return req[0] != Status.NOT_READY;
        });
        return req[0];
    }

    /** {@link #sendWhenReady} of {@link #src} that must yield a request id. */
    protected final int send(long offset, long length, int tag) {
        int req = sendWhenReady(srcReg, offset, length, tag);
        assertTrue(req >= 0, "isend of " + length + " bytes with tag " + tag + ": " + Status.describe(req) + " "
                + sender.error());
        return req;
    }

    /** A receive of one buffer of {@link #dst}; must yield a request id. */
    protected final int recv(long offset, long maxSize, int tag) {
        return recv(new long[] {offset}, new long[] {maxSize}, new int[] {tag}, 0);
    }

    /** A grouped receive into {@link #dst}; must yield a request id. */
    protected final int recv(long[] offsets, long[] maxSizes, int[] tags, int flags) {
        int n = offsets.length;
        int req = receiver.irecv(n, regs(dstReg, n), offsets, maxSizes, tags, flags);
        assertTrue(req >= 0, "irecv of " + n + " buffers with tags " + Arrays.toString(tags) + ": "
                + Status.describe(req) + " " + receiver.error());
        return req;
    }

    /**
     * Drives both ends until every given send and receive has reported 1, testing each until it does and never
     * again; the receiver is polled meanwhile (on TCP it serves the sender's one-sided operations). Fails on any
     * negative status, naming the request and the connection's error.
     */
    protected final void complete(int[] sends, int[] recvs) {
        boolean[] sent = new boolean[sends.length];
        boolean[] got = new boolean[recvs.length];
        await("sends " + Arrays.toString(sends) + " and receives " + Arrays.toString(recvs) + " complete", () -> {
            boolean all = true;
            for (int i = 0; i < sends.length; i++) {
                if (!sent[i]) {
                    int t = sender.test(sends[i]);
                    assertTrue(t >= 0, "sender request " + sends[i] + ": " + Status.describe(t) + ": "
                            + sender.failure(sends[i]));
                    sent[i] = t == 1;
                }
                all &= sent[i];
            }
            for (int i = 0; i < recvs.length; i++) {
                if (!got[i]) {
                    int t = receiver.test(recvs[i]);
                    assertTrue(t >= 0, "receive " + recvs[i] + ": " + Status.describe(t) + ": " + receiver.error());
                    got[i] = t == 1;
                }
                all &= got[i];
            }
            receiver.poll();
            return all;
        });
    }

    /** Tests a sender request until it leaves flight, polling the receiver meanwhile; returns what test said last. */
    protected final int finish(int request) {
        int[] t = new int[1];
        await("sender request " + request + " leaves flight", () -> {
            receiver.poll();
            return (t[0] = sender.test(request)) != 0;
        });
        return t[0];
    }

    /** A one-sided request id that must complete with 1. */
    protected final void completeOneSided(int request, String what) {
        assertTrue(request >= 0, what + ": " + Status.describe(request) + " " + sender.error());
        int t = finish(request);
        assertEquals(1, t, what + ": " + Status.describe(t) + ": " + sender.failure(request));
    }

    protected static Registration[] regs(Registration r, int n) {
        Registration[] out = new Registration[n];
        Arrays.fill(out, r);
        return out;
    }

    /** Deterministic bytes for a seed. */
    protected static void fill(MemorySegment m, long offset, long length, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        long i = 0;
        for (; i + 8 <= length; i += 8) {
            m.set(JAVA_LONG_UNALIGNED, offset + i, rnd.nextLong());
        }
        for (; i < length; i++) {
            m.set(JAVA_BYTE, offset + i, (byte) rnd.nextInt());
        }
    }

    /** Byte for byte; the message names the first byte that differs. */
    protected static void assertSameBytes(MemorySegment expected, long expectedOffset, MemorySegment actual,
                                          long actualOffset, long length, String what) {
        long at = expected.asSlice(expectedOffset, length).mismatch(actual.asSlice(actualOffset, length));
        assertEquals(-1, at, what + ": the first byte that differs, of " + length);
    }

    /** The guard bytes just before and just after [offset, offset + length) are untouched. */
    protected static void assertGuarded(MemorySegment m, long offset, long length, String what) {
        if (offset > 0) {
            assertEquals(GUARD, m.get(JAVA_BYTE, offset - 1), what + ": a byte written before the range");
        }
        if (offset + length < m.byteSize()) {
            assertEquals(GUARD, m.get(JAVA_BYTE, offset + length), what + ": a byte written past the range");
        }
    }

    /**
     * Memory of its own pages, registered apart from the class-wide buffers, so that closing it ends all access to it
     * (verbs shares one memory region among registrations of the same pages). Closed after the test's connection.
     */
    protected final Registration registerApart(long bytes) {
        Registration r = fabric.register(arena.allocate(bytes, 4096));
        apart.add(r);
        return r;
    }
}

package io.jmesh.transport.tcp;

import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.api.Context;
import io.jmesh.api.Setting;
import io.jmesh.api.ListenHandle;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.BooleanSupplier;
import java.util.zip.CRC32C;

import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Loopback-only helpers: every socket in these tests is on a 127.x address. */
final class TcpTestSupport {
    /**
     * The bound of every wait. It only turns a hang into a failure: nothing is expected to take anywhere near this
     * long, and no test asserts how fast anything was.
     */
    static final long PATIENCE_MS = 30_000;

    private TcpTestSupport() {
    }

    /** A provider on the given 127.x addresses (with prefixes), 4 data sockets unless overridden. */
    static TcpProvider provider(String addresses, String... extra) {
        Map<String, String> props = new HashMap<>();
        props.put(Setting.ADDRESSES.property(), addresses);
        for (int i = 0; i + 1 < extra.length; i += 2) {
            props.put(extra[i], extra[i + 1]);
        }
        return TcpProvider.open(Context.from(props, Map.of()));
    }

    /** A connected pair. */
    /** The sockets under a TCP sender. */
    static DataConnection conn(io.jmesh.api.Sender s) {
        return ((TcpSendWire) ((CoreSender) s).wire()).connection();
    }

    /** The sockets under a TCP receiver. */
    static DataConnection conn(io.jmesh.api.Receiver r) {
        return ((TcpReceiveWire) ((CoreReceiver) r).wire()).connection();
    }

    record Pair(CoreSender sender, CoreReceiver receiver) {
    }

    static Pair connect(TcpProvider from, TcpListener to) throws Exception {
        TcpConnect c = from.connect(ListenHandle.decode(to.handle()));
        CoreSender[] s = new CoreSender[1];
        CoreReceiver[] r = new CoreReceiver[1];
        await("connect " + c.route(), () -> {
            if (s[0] == null) {
                s[0] = c.poll();
            }
            if (r[0] == null) {
                r[0] = to.accept();
            }
            return s[0] != null && r[0] != null;
        });
        return new Pair(s[0], r[0]);
    }

    /**
     * A connected loopback socket pair, both ends added to {@code cleanup}: [0] the accepted end, non-blocking, for
     * the wire under test; [1] the client end, blocking, which the test writes by hand.
     */
    static SocketChannel[] socketPair(List<AutoCloseable> cleanup) throws Exception {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            SocketChannel client = SocketChannel.open(server.getLocalAddress());
            SocketChannel accepted = server.accept();
            accepted.configureBlocking(false);
            cleanup.add(client);
            cleanup.add(accepted);
            return new SocketChannel[] {accepted, client};
        }
    }

    /** Polls until {@code condition} holds; fails after {@link #PATIENCE_MS} (a hang guard, not a speed check). */
    static void await(String what, BooleanSupplier condition) {
        long end = System.nanoTime() + PATIENCE_MS * 1_000_000;
        long spins = 0;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                fail("not within " + PATIENCE_MS + " ms: " + what);
            }
            if (++spins % 1024 == 0) {
                Thread.onSpinWait();
                Thread.yield();
            }
        }
    }

    /** isend, retrying while NOT_READY (the receiver flushed its clear-to-send when it posted). */
    static int send(CoreSender s, Registration reg, long offset, long length, int tag) {
        int[] req = new int[1];
        await("isend of " + length + " bytes with tag " + tag, () -> {
            req[0] = s.isend(reg, offset, length, tag);
            return req[0] != Status.NOT_READY;
        });
        return req[0];
    }

    /** Drives both ends until the send and the receive have completed; asserts both report success. */
    static void complete(CoreSender s, int sendReq, CoreReceiver r, int recvReq) {
        int[] sr = new int[1];
        int[] rr = new int[1];
        await("transfer", () -> {
            if (sr[0] == 0) {
                sr[0] = s.test(sendReq);
            }
            if (rr[0] == 0) {
                rr[0] = r.test(recvReq);
            }
            if (sr[0] < 0 || rr[0] < 0) {
                fail("send " + Status.describe(sr[0]) + " / receive " + Status.describe(rr[0]) + ": "
                        + s.error() + " / " + r.error());
            }
            return sr[0] == 1 && rr[0] == 1;
        });
    }

    static void fill(MemorySegment m, long offset, long length, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        long i = 0;
        for (; i + 8 <= length; i += 8) {
            m.set(JAVA_LONG_UNALIGNED, offset + i, rnd.nextLong());
        }
        for (; i < length; i++) {
            m.set(JAVA_BYTE, offset + i, (byte) rnd.nextInt());
        }
    }

    static long crc(MemorySegment m, long offset, long length) {
        CRC32C c = new CRC32C();
        c.update(m.asSlice(offset, length).asByteBuffer());
        return c.getValue();
    }

    static void assertSameBytes(MemorySegment a, long aOff, MemorySegment b, long bOff, long length, String what) {
        long mismatch = a.asSlice(aOff, length).mismatch(b.asSlice(bOff, length));
        assertEquals(-1, mismatch, what + ": first differing byte");
        assertTrue(length == 0 || crc(a, aOff, length) == crc(b, bOff, length), what);
    }

    /** Whether the receiver has failed: some request answers FAILED, or it has an error. */
    static boolean probeFailed(CoreReceiver r) {
        for (int i = 0; i < 32; i++) {
            if (r.test(i) == Status.FAILED) {
                return true;
            }
        }
        return r.error() != null;
    }
}

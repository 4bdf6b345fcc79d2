package io.jmesh.transport.rdma;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Receiver;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;
import io.jmesh.testbed.TestbedEnv;
import io.jmesh.api.Context;
import io.jmesh.api.ListenHandle;

import java.io.File;
import java.lang.foreign.MemorySegment;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;

/**
 * What the real-verbs robustness tests share: settings, rendezvous with the peers (handles through the shared
 * folder, {@code testbed-barrier}), deadlines that turn a hang into a failure, checksummed content, the kernel's count
 * of verbs objects ({@code rdma res}), and the class path for a child JVM. Not thread-safe; tests are sequential.
 */
final class RdmaTestbedSupport {
    /** Per-step deadline: generous for TCG, where a round trip takes 1-10 ms and a link carries 5-20 MB/s. */
    static final Duration STEP = Duration.ofSeconds(120);

    /**
     * How many times its usual waits a test spanning every guest gets: one for up to four guests, one more for each
     * four beyond, since the guests share the host's cores and each node handles more peers (ring:8 and mesh:5 on 2
     * cores: a node's application accepted its peers' handshakes after more than 30 s).
     */
    static long crowding() {
        return Math.max(1, (TestbedEnv.get("TESTBED_GUESTS").trim().split("\\s+").length + 3) / 4);
    }
    /**
     * The QP settings of the failure tests: ACK timeout exponent 18 (4.096 us * 2^18 = 1.07 s; under TCG anything
     * shorter retransmits spuriously, docs/testing.md) and 3 retries, so a dead peer shows after about 4 s.
     */
    static final int IB_TIMEOUT = 18;
    static final int IB_RETRY = 3;

    private RdmaTestbedSupport() {
    }

    /**
     * The environment's settings with the failure tests' QP timeout and retry count, and a 30 s handshake timeout: a
     * handshake through two relays whose JVMs have just started took over 10 s (the default) on a loaded TCG host.
     */
    static Context failureContext() {
        return new Context().ibTimeout(IB_TIMEOUT).ibRetryCount(IB_RETRY).handshakeTimeoutMs(30_000);
    }

    /** One RC ACK timeout in milliseconds: 4.096 us * 2^exponent. */
    static long ackTimeoutMillis(int exponent) {
        return (4096L << exponent) / 1_000_000L;
    }

    /**
     * How long a side may take to see that its peer is gone: the transport needs at most one probe interval (one ACK
     * timeout) plus (retries + 1) ACK timeouts; this allows four times that plus 30 s for a loaded TCG host. It is a
     * no-hang deadline, not a speed check.
     */
    static Duration failureBound() {
        return Duration.ofMillis(30_000 + 4 * (IB_RETRY + 2) * ackTimeoutMillis(IB_TIMEOUT));
    }

    /** Waits at the testbed barrier {@code name} (each name is used once per test, so a failed test cannot shift). */
    static void barrier(String name) throws Exception {
        Process p = new ProcessBuilder("testbed-barrier", name, Long.toString(STEP.toSeconds())).inheritIO().start();
        if (!p.waitFor(STEP.toSeconds() + 30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("testbed-barrier " + name + " did not return");
        }
        if (p.exitValue() != 0) {
            throw new AssertionError("testbed-barrier " + name + " failed (exit " + p.exitValue()
                    + "): a peer did not arrive within " + STEP.toSeconds() + " s");
        }
    }

    static void publishHandle(String key, byte[] handle) throws Exception {
        TestbedEnv.publish(key, HexFormat.of().formatHex(handle));
    }

    static byte[] awaitHandle(String key) throws Exception {
        return HexFormat.of().parseHex(TestbedEnv.await(key, STEP).trim());
    }

    static ListenHandle awaitListenHandle(String key) throws Exception {
        return ListenHandle.decode(awaitHandle(key));
    }

    /**
     * The kernel's count of verbs objects per device, from {@code rdma res show}: "rxe0 qp" -> 1, ... (the kernel's
     * own GSI QP included), so a test can check that everything it made is gone again.
     */
    static Map<String, Long> rdmaResources() throws Exception {
        Process p = new ProcessBuilder("rdma", "res", "show").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new AssertionError("'rdma res show' failed: " + out);
        }
        Map<String, Long> counts = new HashMap<>();
        for (String line : out.split("\n")) {
            // 0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0
            String[] t = line.trim().split("\\s+");
            if (t.length < 4 || !t[1].endsWith(":")) {
                continue;
            }
            String dev = t[1].substring(0, t[1].length() - 1);
            for (int i = 2; i + 1 < t.length; i += 2) {
                counts.put(dev + " " + t[i], Long.parseLong(t[i + 1]));
            }
        }
        if (counts.isEmpty()) {
            throw new AssertionError("'rdma res show' listed no device: " + out);
        }
        return counts;
    }

    /**
     * Waits (at most 20 s: the kernel may finish tearing a QP down just after the call returned) until the kernel's
     * count of verbs objects is {@code before} again, then asserts it.
     */
    static void assertResourcesBackTo(Map<String, Long> before, String what) throws Exception {
        long deadline = System.nanoTime() + 20_000_000_000L;
        Map<String, Long> now = rdmaResources();
        while (!now.equals(before) && System.nanoTime() < deadline) {
            Thread.sleep(200);
            now = rdmaResources();
        }
        if (!now.equals(before)) {
            throw new AssertionError("verbs objects left behind " + what + ": before " + new java.util.TreeMap<>(before)
                    + ", now " + new java.util.TreeMap<>(now));
        }
    }

    /**
     * Closes in reverse order of opening, each even when an earlier one failed; returns the first failure (the later
     * ones suppressed in it), or null. An Error is thrown once everything is closed.
     */
    static Exception closeAll(List<? extends AutoCloseable> open) {
        Throwable first = CloseHelper.closeAllCatching(open.reversed());
        open.clear();
        if (first instanceof Error e) {
            throw e;
        }
        return (Exception) first;
    }

    interface Call {
        int call();
    }

    static String error(Object conn) {
        return conn instanceof Sender s ? s.error() : ((Receiver) conn).error();
    }

    /** Calls {@code c} until it yields a request id; fails on an error status or after {@link #STEP}. */
    static int awaitRequest(Call c, Object conn, String what) {
        long deadline = System.nanoTime() + STEP.toNanos();
        while (true) {
            int r = c.call();
            if (r >= 0) {
                return r;
            }
            if (r != Status.NOT_READY) {
                throw new AssertionError(what + ": " + Status.describe(r) + ": " + error(conn));
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what + ": no clear-to-send within " + STEP.toSeconds() + " s");
            }
            Thread.onSpinWait();
        }
    }

    /** Tests a request until it completes; fails on an error status or after {@link #STEP}. */
    static void awaitDone(Call test, Object conn, String what) {
        long deadline = System.nanoTime() + STEP.toNanos();
        int r;
        while ((r = test.call()) == 0) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what + ": not complete within " + STEP.toSeconds() + " s");
            }
            Thread.onSpinWait();
        }
        if (r != 1) {
            throw new AssertionError(what + ": " + Status.describe(r) + ": " + error(conn));
        }
    }

    /** Deterministic content for a seed, so the receiver can check every byte. */
    static void fill(MemorySegment seg, long length, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        for (long i = 0; i + 4 <= length; i += 4) {
            seg.set(JAVA_INT_UNALIGNED, i, rnd.nextInt());
        }
        for (long i = length & ~3L; i < length; i++) {
            seg.set(JAVA_BYTE, i, (byte) rnd.nextInt());
        }
    }

    static long crc(MemorySegment seg, long length) {
        CRC32C crc = new CRC32C();
        crc.update(seg.asSlice(0, length).asByteBuffer());
        return crc.getValue();
    }

    /** The checksum {@link #fill} gives {@code length} bytes of {@code seed}, computed in {@code scratch}. */
    static long expectedCrc(MemorySegment scratch, long length, long seed) {
        fill(scratch, length, seed);
        return crc(scratch, length);
    }

    static long seed(String sender, int connection, int message) {
        return sender.hashCode() * 1_000_003L + connection * 10_007L + message;
    }

    /**
     * The class path of this test run for a child JVM: the JVM's own (the console launcher, JUnit included) and the
     * URLs of the class loaders that loaded this class (testbed/junit's --class-path).
     */
    static String childClassPath() throws URISyntaxException {
        Set<String> entries = new LinkedHashSet<>();
        List<ClassLoader> loaders = new ArrayList<>();
        for (ClassLoader l = RdmaTestbedSupport.class.getClassLoader(); l != null; l = l.getParent()) {
            loaders.add(0, l);
        }
        for (String e : System.getProperty("java.class.path", "").split(File.pathSeparator)) {
            if (!e.isEmpty()) {
                entries.add(e);
            }
        }
        for (ClassLoader l : loaders) {
            if (l instanceof URLClassLoader u) {
                for (URL url : u.getURLs()) {
                    if ("file".equals(url.getProtocol())) {
                        entries.add(Path.of(url.toURI()).toString());
                    }
                }
            }
        }
        var here = RdmaTestbedSupport.class.getProtectionDomain().getCodeSource();
        if (here != null && "file".equals(here.getLocation().getProtocol())) {
            entries.add(Path.of(here.getLocation().toURI()).toString());
        }
        return String.join(File.pathSeparator, entries);
    }

    /** The java command of this JVM, for a child JVM on the same JDK. */
    static String javaCommand() {
        return ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }

    static boolean exists(String key) {
        return Files.exists(TestbedEnv.shared().resolve(key));
    }
}

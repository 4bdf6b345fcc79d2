package io.jmesh.cli.perf;

import io.jmesh.cli.Json;

import java.io.IOException;
import java.io.PrintStream;

/**
 * The out-of-band lines that every server loop answers alike, the errors they share, and how they notice that the
 * client went away in the middle of a run.
 */
final class ServerLines {
    /**
     * How long a loop sees no progress before it also {@link Oob#probe probes} the out-of-band connection, and how
     * often after that: under half the shortest --timeout, so a client that closed it is named as such before the
     * timeout speaks of a silent one; and never while messages flow, as the probe may wait a millisecond.
     */
    private static final long PROBE_NS = 500_000_000L;

    private final PerfOptions o;
    private final PrintStream out;
    private final PrintStream json;
    private final String provider;
    private long lastProbe = System.nanoTime();

    /** @param json where the client's results go as JSON objects (--json), or null */
    ServerLines(PerfOptions o, PrintStream out, PrintStream json, String provider) {
        this.o = o;
        this.out = out;
        this.json = json;
        this.provider = provider;
    }

    /** The client's "end totals=T" in an echo loop: T, the messages to echo in all, checked against those echoed. */
    static long echoTarget(String line, long echoed) throws IOException {
        long target = PerfProtocol.totals(Oob.fields(line, "end"), 1)[0];
        if (echoed > target) {
            throw new IOException("echoed " + echoed + " messages but the client sent " + target);
        }
        return target;
    }

    IOException stalled(long echoed, long target) {
        return new IOException("no message for " + o.timeout().toSeconds() + " s (echoed " + echoed + " of " + target
                + "): the link stalled");
    }

    /**
     * The client neither sent a message nor said anything for --timeout, with no end in sight: it can no longer be
     * told apart from one that is gone. {@code progress} says how far the run got.
     */
    IOException silent(String progress) {
        return new IOException("nothing from the client for " + o.timeout().toSeconds() + " s in the middle of the "
                + "run (" + progress + ", no message since and no out-of-band line): its process is stopped or hung, "
                + "or its machine or the link went down; see the client's output and start both ends again (raise "
                + "--timeout where the client may pause that long)");
    }

    /**
     * Whether the client said something, or went away (then {@link #control} says so): the cheap {@link Oob#ready}
     * on every call, and once the loop has been idle a while, a few {@link Oob#probe probes} a second, since only a
     * probe sees a client that died or closed the connection. Its jmesh connections may not tell: verbs notices a
     * dead process only after its retries, and not at all one whose liveness thread still answers.
     */
    boolean pending(Oob oob, long now, long lastProgress) throws IOException {
        if (oob.ready()) {
            return true;
        }
        long idle = now - lastProgress;
        if (idle < PROBE_NS || (now - lastProbe < PROBE_NS && idle <= o.timeout().toNanos())) {
            return false;
        }
        lastProbe = now;
        return oob.probe();
    }

    /**
     * Reads one out-of-band line in a server loop and answers what every loop answers alike: "jit" (this JVM's
     * compilation time) and "report" (the client's result line, printed here too). Returns any other line, or null.
     */
    String control(Oob oob) throws IOException {
        String line;
        try {
            line = oob.receive();
            if (line.equals("jit")) {
                oob.send("jit ms=" + JitSettle.compileMillis());
                return null;
            }
        } catch (IOException e) {
            throw new IOException("the client went away in the middle of the run: " + e.getMessage() + "; this "
                    + "server served it and exits: start both ends again", e);
        }
        if (line.startsWith("report ")) {
            out.println(line.substring(7));
            out.flush();
            Json j = json == null ? null : PerfReport.json(o, "server", provider, null, line.substring(7));
            if (j != null) {
                json.println(j);
                json.flush();
            }
            return null;
        }
        return line;
    }
}

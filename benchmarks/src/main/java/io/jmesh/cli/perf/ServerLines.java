package io.jmesh.cli.perf;

import java.io.IOException;
import java.io.PrintStream;

/** The out-of-band lines that every server loop answers alike, and the errors they share. */
final class ServerLines {
    private final PerfOptions o;
    private final PrintStream out;

    ServerLines(PerfOptions o, PrintStream out) {
        this.o = o;
        this.out = out;
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
     * Reads one out-of-band line in a server loop and answers what every loop answers alike: "jit" (this JVM's
     * compilation time) and "report" (the client's result line, printed here too). Returns any other line, or null.
     */
    String control(Oob oob) throws IOException {
        String line = oob.receive();
        if (line.equals("jit")) {
            oob.send("jit ms=" + JitSettle.compileMillis());
            return null;
        }
        if (line.startsWith("report ")) {
            out.println(line.substring(7));
            out.flush();
            return null;
        }
        return line;
    }
}

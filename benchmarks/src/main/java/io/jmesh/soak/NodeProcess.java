package io.jmesh.soak;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One incarnation of a soak node's JVM, seen from the driver: started, frozen and thawed (SIGSTOP/SIGCONT through
 * /bin/kill: Java has no call for them), killed (SIGKILL), told things on stdin. Its stdout lines go to the driver's
 * queue, tagged with the node and incarnation; its stderr to a log file.
 */
final class NodeProcess {
    /** A line a node printed, and when the driver read it. */
    record Line(int node, int incarnation, String text) {
    }

    final int node;
    final int incarnation;
    private final Process process;
    private final OutputStream stdin;
    private volatile boolean frozen;

    NodeProcess(int node, int incarnation, List<String> command, File stderr, BlockingQueue<Line> lines)
            throws IOException {
        this.node = node;
        this.incarnation = incarnation;
        this.process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.appendTo(stderr)).start();
        this.stdin = process.getOutputStream();
        Thread.ofPlatform().daemon().name("soak-node-" + node + "-" + incarnation).start(() -> {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String l;
                while ((l = out.readLine()) != null) {
                    lines.add(new Line(node, incarnation, l));
                }
            } catch (IOException e) {
                // the process died: its stream ends
            }
        });
    }

    long pid() {
        return process.pid();
    }

    /** Sends a command line; a dead node's is dropped (its restart gets the state anew). */
    void send(String line) {
        try {
            stdin.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            stdin.flush();
        } catch (IOException e) {
            // gone: nothing to tell it
        }
    }

    void freeze() throws IOException, InterruptedException {
        signal("STOP");
        frozen = true;
    }

    void thaw() throws IOException, InterruptedException {
        signal("CONT");
        frozen = false;
    }

    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    boolean alive() {
        return process.isAlive();
    }

    /** Waits for it to exit after STOP; kills it if it does not. Returns its exit status, or -1 if it was killed. */
    int awaitExit(long ms) throws InterruptedException {
        if (process.waitFor(ms, TimeUnit.MILLISECONDS)) {
            return process.exitValue();
        }
        destroy();
        return -1;
    }

    /** Ends it whatever its state: a frozen process is thawed first, or SIGKILL would wait on nothing. */
    void destroy() {
        if (!process.isAlive()) {
            return;
        }
        try {
            if (frozen) {
                thaw();
            }
        } catch (IOException | InterruptedException e) {
            // SIGKILL ends a stopped process too
        }
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("/bin/kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            kill.destroyForcibly();
            throw new IOException("/bin/kill -" + name + " " + process.pid() + " failed: is the node still running?"
                    + " (see its stderr log)");
        }
    }
}

package io.jmesh.soak;

import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.Listener;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One node of the chaos soak, as its own process, written as an application would be against the public API: a TCP
 * fabric on its ring addresses, a stream of checked messages to every other node ({@link OutStream}) and a check of
 * every stream it accepts ({@link InStream}), all on one polling thread. It prints events ({@link Events}) and takes
 * commands on stdin from the driver ({@link ChaosSoak}): "PEER id handle" (a peer's listener, again whenever it
 * restarted), "STOP" (finish gracefully: complete what is in flight, close, wait for the peers' streams to close,
 * report the counts, then say DONE) and "EXIT" (once every node is done: close the fabric, which relays for others). The end of stdin (the driver died) ends it at once, so that no node outlives its driver.
 *
 * <p>Arguments: id, node count, this node's addresses, incarnation, messages per second per peer, seed. Settings
 * (provider, route port, liveness timeout) come as -Djmesh.* properties.
 */
public final class SoakNode {
    private static final long SAMPLE_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long DRAIN_NANOS = TimeUnit.SECONDS.toNanos(30);

    private SoakNode() {
    }

    public static void main(String[] args) throws Exception {
        int self = Integer.parseInt(args[0]);
        int nodes = Integer.parseInt(args[1]);
        long incarnation = Long.parseLong(args[3]);
        double rate = Double.parseDouble(args[4]);
        long seed = Long.parseLong(args[5]);
        ConcurrentLinkedQueue<String> commands = new ConcurrentLinkedQueue<>();
        Thread stdin = Thread.ofPlatform().daemon().name("soak-stdin").start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    commands.add(line);
                }
            } catch (java.io.IOException e) {
                // as the end of stdin
            }
            commands.add("EOF");
        });
        try (Arena arena = Arena.ofShared();
             Fabric fabric = Fabric.open(new Context().provider("tcp").addresses(args[2]));
             Listener listener = fabric.listen()) {
            List<OutStream> outs = new ArrayList<>();
            OutStream[] byPeer = new OutStream[nodes];
            for (int p = 0; p < nodes; p++) {
                if (p != self) {
                    Registration r = fabric.register(arena.allocate((long) OutStream.WINDOW * Message.MAX, 4096));
                    byPeer[p] = new OutStream(fabric, self, p, r, seed, incarnation, rate);
                    outs.add(byPeer[p]);
                }
            }
            Events.emit("HANDLE", "node=" + self + " incarnation=" + incarnation + " handle="
                    + listener.handleText());
            new SoakNode().run(fabric, listener, arena, outs, byPeer, commands, nodes);
        }
        stdin.interrupt();
        System.exit(0);
    }

    private void run(Fabric fabric, Listener listener, Arena arena, List<OutStream> outs, OutStream[] byPeer,
                     ConcurrentLinkedQueue<String> commands, int nodes) {
        List<InStream> ins = new ArrayList<>();
        ArrayDeque<Registration> free = new ArrayDeque<>();
        Set<String> sessionsSeen = new HashSet<>();
        long[] perSource = new long[nodes];
        boolean stopping = false;
        boolean done = false;
        long stopAt = 0;
        long nextSample = System.nanoTime();
        long checked = 0;
        long badTotal = 0;
        while (true) {
            long now = System.nanoTime();
            String c;
            while ((c = commands.poll()) != null) {
                String[] w = c.split(" ", 3);
                switch (w[0]) {
                    case "PEER" -> byPeer[Integer.parseInt(w[1])].handle(w[2]);
                    case "STOP" -> {
                        stopping = true;
                        stopAt = now;
                    }
                    case "EXIT" -> {
                        Events.emit("EXIT", "");
                        return;
                    }
                    case "EOF" -> {
                        System.err.println("soak node: stdin ended (the driver is gone): exiting");
                        System.exit(3);
                    }
                    default -> System.err.println("soak node: unknown command '" + c + "'");
                }
            }
            boolean worked = false;
            Receiver r;
            while ((r = listener.accept()) != null) {
                Registration slots = free.isEmpty()
                        ? fabric.register(arena.allocate((long) OutStream.WINDOW * Message.MAX, 4096))
                        : free.pop();
                ins.add(new InStream(r, slots, sessionsSeen, perSource));
                worked = true;
            }
            for (OutStream o : outs) {
                worked |= o.step(now, !stopping);
            }
            for (int i = ins.size() - 1; i >= 0; i--) {
                InStream in = ins.get(i);
                worked |= in.step();
                if (in.ended()) {
                    checked += in.bytes;
                    badTotal += in.bad;
                    free.push(in.slots());
                    ins.remove(i);
                }
            }
            if (now - nextSample >= 0) {
                nextSample += SAMPLE_NANOS;
                sample(outs, ins, perSource, checked, badTotal);
            }
            if (stopping && !done && outs.stream().allMatch(OutStream::drained)) {
                outs.forEach(OutStream::finish);
                if (ins.isEmpty() || now - stopAt > DRAIN_NANOS) {
                    ins.forEach(InStream::abandon);
                    ins.clear();
                    sample(outs, ins, perSource, checked, badTotal);
                    // the fabric stays open until EXIT: it relays other nodes' connections, whose goodbyes may
                    // still be on their way through it
                    Events.emit("DONE", "");
                    done = true;
                }
            }
            if (!worked) {
                LockSupport.parkNanos(200_000);
            }
        }
    }

    private static void sample(List<OutStream> outs, List<InStream> ins, long[] perSource, long checked, long bad) {
        long sent = 0;
        long sentBytes = 0;
        for (OutStream o : outs) {
            sent += o.totalDone;
            sentBytes += o.totalBytes;
        }
        for (InStream in : ins) {
            checked += in.bytes;
            bad += in.bad;
        }
        StringBuilder got = new StringBuilder();
        for (long n : perSource) {
            got.append(got.isEmpty() ? "" : ",").append(n);
        }
        Events.emit("SAMPLE", Events.resources() + " sent=" + sent + " sent_bytes=" + sentBytes + " checked_bytes="
                + checked + " bad=" + bad + " got=" + got);
    }
}

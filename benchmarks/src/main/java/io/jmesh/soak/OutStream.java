package io.jmesh.soak;

import io.jmesh.api.Connector;
import io.jmesh.api.Fabric;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;

import java.util.ArrayDeque;
import java.util.SplittableRandom;

/**
 * This node's stream to one peer: connects (again after every failure, as an application would: close, then connect
 * anew, each connection a new session whose sequence starts at 0), keeps up to {@link #WINDOW} numbered messages in
 * flight at a paced rate, and reports what happens to the connection.
 */
final class OutStream {
    static final int WINDOW = 4;
    static final int TAG = 7;
    private static final long RETRY_MS = 300;

    private final Fabric fabric;
    private final int self;
    private final int peer;
    private final Registration slots;
    private final SplittableRandom random;
    private final long intervalNanos;
    private final long sessionBase;
    private int sessions;
    private String handle;
    private Connector connector;
    private Sender sender;
    private long session;
    private long nextSeq;
    private long done;
    private boolean pending;
    private int pendingLength;
    private long nextSendAt;
    private long retryAt;
    private final ArrayDeque<Integer> inFlight = new ArrayDeque<>();
    /** Messages completed over all sessions, and their bytes. */
    long totalDone;
    long totalBytes;
    private final ArrayDeque<Integer> lengths = new ArrayDeque<>();

    OutStream(Fabric fabric, int self, int peer, Registration slots, long seed, long incarnation, double rate) {
        this.fabric = fabric;
        this.self = self;
        this.peer = peer;
        this.slots = slots;
        this.random = new SplittableRandom(seed * 31 + self * 1009L + peer);
        this.intervalNanos = (long) (1e9 / rate);
        this.sessionBase = incarnation << 32;
        this.nextSendAt = System.nanoTime();
        this.retryAt = nextSendAt;
    }

    /** The peer's listener handle; a new one (the peer restarted) abandons a connect to the old one. */
    void handle(String text) {
        if (text.equals(handle)) {
            return;
        }
        handle = text;
        if (connector != null) {
            connector.close();
            connector = null;
            retryAt = System.nanoTime();
        }
    }

    boolean connected() {
        return sender != null;
    }

    /** One turn; {@code sending} false drains what is in flight and sends nothing new. Returns whether it did work. */
    boolean step(long now, boolean sending) {
        if (sender == null) {
            return sending && connect(now);
        }
        boolean worked = false;
        while (!inFlight.isEmpty()) {
            int r = sender.test(inFlight.peekFirst());
            if (r == 0) {
                break;
            }
            if (r != 1) {
                fault(r, now);
                return true;
            }
            inFlight.removeFirst();
            done++;
            totalDone++;
            totalBytes += lengths.removeFirst();
            worked = true;
        }
        if (!sending) {
            pending = false;
            return worked;
        }
        if (!pending && inFlight.size() < WINDOW && now - nextSendAt >= 0) {
            pendingLength = Message.size(random);
            Message.write(slots.memory().asSlice(slot(nextSeq)), self, session, nextSeq, pendingLength);
            pending = true;
            nextSendAt = Math.max(nextSendAt + intervalNanos, now - 10 * intervalNanos);
        }
        if (pending) {
            int id = sender.isend(slots, slot(nextSeq), pendingLength, TAG);
            if (id >= 0) {
                inFlight.addLast(id);
                lengths.addLast(pendingLength);
                nextSeq++;
                pending = false;
                worked = true;
            } else if (id != Status.NOT_READY) {
                fault(id, now);
                return true;
            }
        }
        return worked;
    }

    /** Whether every message issued has completed (after {@code step(now, false)}). */
    boolean drained() {
        return sender == null || inFlight.isEmpty();
    }

    /** The graceful end: every completed message is to be delivered; reports how many that is. */
    void finish() {
        if (sender != null) {
            Events.emit("FINAL", "dir=out peer=" + peer + " session=" + session + " done=" + done
                    + " inflight=" + inFlight.size());
            sender.close();
            sender = null;
        }
        if (connector != null) {
            connector.close();
            connector = null;
        }
    }

    private long slot(long seq) {
        return (seq % WINDOW) * Message.MAX;
    }

    private boolean connect(long now) {
        if (handle == null || now - retryAt < 0) {
            return false;
        }
        try {
            if (connector == null) {
                connector = fabric.connect(handle);
            }
            Sender s = connector.poll();
            if (s == null) {
                return false;
            }
            sender = s;
            session = sessionBase | ++sessions;
            nextSeq = 0;
            done = 0;
            pending = false;
            inFlight.clear();
            lengths.clear();
            Events.emit("UP", "dir=out peer=" + peer + " session=" + session, "route " + connector.route());
            connector.close();
            connector = null;
        } catch (RuntimeException | io.jmesh.api.NoRouteException e) {
            Events.emit("CONNECT_FAIL", "peer=" + peer, e.getMessage());
            if (connector != null) {
                connector.close();
                connector = null;
            }
            retryAt = now + RETRY_MS * 1_000_000L;
        }
        return true;
    }

    private void fault(int status, long now) {
        Events.emit("FAULT", "dir=out peer=" + peer + " session=" + session + " status=" + Status.describe(status)
                + " count=" + done, sender.error());
        sender.close();
        sender = null;
        pending = false;
        inFlight.clear();
        lengths.clear();
        retryAt = now + RETRY_MS * 1_000_000L;
    }
}

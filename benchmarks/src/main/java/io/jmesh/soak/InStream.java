package io.jmesh.soak;

import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;

import java.util.Set;

/**
 * One accepted connection: keeps {@link OutStream#WINDOW} receives posted and checks every message. Sends fill
 * receives in the order they were posted, so the receive posted n-th in a session must hold that session's message
 * n: anything else is a message lost, repeated or out of order. The sender names itself and its session in every
 * message (an accepted connection does not say who made it); a session seen on two connections is a duplicate.
 */
final class InStream {
    private final Receiver receiver;
    private final Registration slots;
    private final Set<String> sessionsSeen;
    private final int[] ids = new int[OutStream.WINDOW];
    private final long[] ordinals = new long[OutStream.WINDOW];
    private long posted;
    private int src = -1;
    private long session;
    private long got;
    private boolean ended;
    /** CLOSED once a receive answered it: the sender closed gracefully. */
    private int closed;
    /** Messages that failed a check; each is reported. */
    long bad;
    long bytes;
    long[] perSource;

    InStream(Receiver receiver, Registration slots, Set<String> sessionsSeen, long[] perSource) {
        this.receiver = receiver;
        this.slots = slots;
        this.sessionsSeen = sessionsSeen;
        this.perSource = perSource;
        for (int k = 0; k < ids.length; k++) {
            ids[k] = -1;
        }
    }

    Registration slots() {
        return slots;
    }

    boolean ended() {
        return ended;
    }

    /** One turn: posts free slots, checks completed ones. Returns whether it did work. */
    boolean step() {
        if (ended) {
            return false;
        }
        boolean worked = false;
        for (int k = 0; k < ids.length && !ended; k++) {
            if (ids[k] < 0 && closed != 0) {
                continue;           // closed: nothing more is posted, the receives still out are tested below
            }
            if (ids[k] < 0) {
                int id = receiver.irecv(slots, (long) k * Message.MAX, Message.MAX, OutStream.TAG);
                if (id >= 0) {
                    ids[k] = id;
                    ordinals[k] = posted++;
                    worked = true;
                } else if (id != Status.NOT_READY) {
                    end(id);
                }
                continue;
            }
            int r = receiver.test(ids[k]);
            if (r == 1) {
                check(k, receiver.size(ids[k], 0));
                ids[k] = -1;
                worked = true;
            } else if (r == Status.CLOSED) {
                // a graceful close: this receive gets nothing more, but one posted earlier in another slot may
                // still hold a message (receives complete out of posting order), so each is tested to its end
                closed = r;
                ids[k] = -1;
                worked = true;
            } else if (r < 0) {
                end(r);
            }
        }
        if (closed != 0 && !ended && java.util.Arrays.stream(ids).allMatch(id -> id < 0)) {
            end(closed);
        }
        return worked;
    }

    /** At the end of the soak: a connection whose sender never closed it (a fault nobody reported). */
    void abandon() {
        if (!ended) {
            Events.emit("STUCK", "dir=in peer=" + src + " session=" + session + " count=" + got,
                    "the connection neither closed nor failed by the end of the soak");
            ended = true;
        }
        receiver.close();
    }

    private void check(int k, long size) {
        Message.Header h = Message.read(slots.memory().asSlice((long) k * Message.MAX), size);
        String problem = h.problem();
        if (problem == null) {
            if (src < 0) {
                src = h.src();
                session = h.session();
                if (!sessionsSeen.add(src + "/" + session)) {
                    problem = "session " + session + " of node " + src + " arrived on a second connection";
                } else {
                    Events.emit("UP", "dir=in peer=" + src + " session=" + session);
                }
            } else if (h.src() != src || h.session() != session) {
                problem = "a message of node " + h.src() + " session " + h.session() + " on the connection of node "
                        + src + " session " + session;
            }
        }
        if (problem == null && h.seq() != ordinals[k]) {
            problem = "message " + h.seq() + " in the receive posted " + ordinals[k] + "th of the session ("
                    + (h.seq() < ordinals[k] ? "repeated or late" : "earlier ones lost or late") + ")";
        }
        if (problem != null) {
            bad++;
            Events.emit("BAD", "dir=in peer=" + src + " session=" + session, problem);
            return;
        }
        got++;
        bytes += size;
        if (src < perSource.length) {
            perSource[src]++;
        }
    }

    private void end(int status) {
        ended = true;
        String type = status == Status.CLOSED ? "END" : "FAULT";
        Events.emit(type, "dir=in peer=" + src + " session=" + session + " status=" + Status.describe(status)
                + " count=" + got, receiver.error());
        receiver.close();
    }
}

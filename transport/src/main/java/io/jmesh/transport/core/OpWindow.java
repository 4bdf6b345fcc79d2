package io.jmesh.transport.core;

import io.jmesh.api.Status;

/**
 * A ring of {@link #SIZE} operations with request ids {@code base + index}, issued in ring order: a sender's
 * one-sided writes and reads (ids from {@link CoreSender#OP_BASE}), a receiver's flushes (from {@link
 * CoreReceiver#FLUSH_BASE}). Issue order is ring order, so a wire that completes them in order (TCP) finds the next
 * one at {@code (completed) mod SIZE}.
 */
public final class OpWindow {
    public static final int SIZE = 32;

    private final int base;
    private final Op[] ops = new Op[SIZE];
    private long issued;

    OpWindow(int base) {
        this.base = base;
        for (int i = 0; i < SIZE; i++) {
            ops[i] = new Op(i);
        }
    }

    public Op op(int index) {
        return ops[index];
    }

    /** The op the next issue takes, or null while it is still unreported. */
    Op next() {
        Op op = ops[(int) (issued & (SIZE - 1))];
        return op.busy ? null : op;
    }

    int issue(Op op) {
        op.busy = true;
        op.issued = true;
        op.result = 0;
        op.failure = null;
        issued++;
        return base + op.index;
    }

    /** Whether {@code id} falls in this window. */
    boolean owns(int id) {
        return id >= base && id < base + SIZE;
    }

    /** Test of an id this window owns; the wire makes progress once when the op is not finished yet. */
    int test(int id, Fate fate, Wire wire) {
        Op op = ops[id - base];
        if (!op.busy) {
            return Status.BAD_ARGUMENT;
        }
        if (op.result == 0) {
            if (fate.failed()) {
                return Status.FAILED;
            }
            wire.progress();
            if (op.result == 0) {
                return fate.inFlight();
            }
        }
        op.busy = false;
        op.local = null;
        op.remote = null;
        return op.result;
    }

    long size(int id) {
        Op op = ops[id - base];
        return op.issued ? op.length : -1;
    }

    String failure(int id) {
        return ops[id - base].failure;
    }
}

package io.jmesh.nccl;

import java.util.ArrayList;
import java.util.List;

/**
 * Objects NCCL refers to by opaque pointer: the pointer is the slot index + 1 (never 0, which NCCL reads as "none"),
 * so {@link #get} is an array read, without a map, lock or allocation. Slots are handed out and freed on the control
 * path under the table's lock; the slot array is republished through a volatile field when it grows.
 *
 * @param <T> what the handles stand for
 */
final class HandleTable<T> {
    private static final int MAX = 1 << 20;

    private volatile Object[] slots = new Object[64];
    private final int[] free = new int[MAX];
    private int freeCount;
    private int next;
    private int live;

    /** Stores {@code value} and returns its handle (> 0). */
    synchronized long add(T value) {
        int i;
        if (freeCount > 0) {
            i = free[--freeCount];
        } else {
            if (next == MAX) {
                throw new IllegalStateException("more than " + MAX + " live NCCL objects; are comms or memory "
                        + "registrations leaking (never closed)?");
            }
            i = next++;
            if (i >= slots.length) {
                slots = java.util.Arrays.copyOf(slots, Math.min(MAX, slots.length * 2));
            }
        }
        Object[] s = slots;
        s[i] = value;
        slots = s; // volatile write: publishes the slot to threads that read through get()
        live++;
        return i + 1L;
    }

    /** The object for {@code handle}, or null when it is not a live handle. */
    @SuppressWarnings("unchecked")
    T get(long handle) {
        Object[] s = slots;
        long i = handle - 1;
        return i >= 0 && i < s.length ? (T) s[(int) i] : null;
    }

    /** Frees a handle and returns what it stood for, or null when it was not live. */
    @SuppressWarnings("unchecked")
    synchronized T remove(long handle) {
        Object[] s = slots;
        long i = handle - 1;
        if (i < 0 || i >= s.length || s[(int) i] == null) {
            return null;
        }
        T value = (T) s[(int) i];
        s[(int) i] = null;
        slots = s;
        free[freeCount++] = (int) i;
        live--;
        return value;
    }

    synchronized int size() {
        return live;
    }

    /** Removes everything and returns it, in handle order. */
    @SuppressWarnings("unchecked")
    synchronized List<T> drain() {
        List<T> out = new ArrayList<>();
        Object[] s = slots;
        for (int i = 0; i < next; i++) {
            if (s[i] != null) {
                out.add((T) s[i]);
                s[i] = null;
            }
        }
        slots = s;
        next = 0;
        freeCount = 0;
        live = 0;
        return out;
    }
}

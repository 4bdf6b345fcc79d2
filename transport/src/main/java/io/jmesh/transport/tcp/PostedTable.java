package io.jmesh.transport.tcp;

import io.jmesh.api.Registration;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.ReceiveSlot;
import io.jmesh.transport.core.Slots;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The receives a receiver has posted, as its bulk {@link ReceiveLane}s see them: for each slot, the buffers' memory,
 * offset and size, stamped with the receive's sequence number. The receiver's thread fills an entry before the
 * clear-to-send leaves and clears its stamp when the receive completes; a lane reading a chunk header looks the
 * destination up here, on its own thread. Stamps are written with release and read with acquire, before and after
 * the fields, so a lane either sees a whole entry of the right receive or refuses the chunk.
 */
final class PostedTable {
    private static final VarHandle STAMP = MethodHandles.arrayElementVarHandle(int[].class);

    private final int[] stamps = new int[Cts.MAX_REQUESTS];
    private final int[] counts = new int[Cts.MAX_REQUESTS];
    private final TcpRegistration[] registrations = new TcpRegistration[Slots.BUFFERS];
    private final long[] offsets = new long[Slots.BUFFERS];
    private final long[] sizes = new long[Slots.BUFFERS];

    /** Publishes a posted receive; the receiver's thread, before its clear-to-send is queued. */
    void publish(ReceiveSlot slot) {
        int s = slot.index;
        STAMP.setRelease(stamps, s, 0);
        VarHandle.storeStoreFence();                // the cleared stamp is seen before any field changes
        counts[s] = slot.nreqs;
        for (int i = 0; i < slot.nreqs; i++) {
            Registration r = slot.registration[i];
            registrations[Slots.key(s, i)] = r instanceof TcpRegistration t ? t : null;
            offsets[Slots.key(s, i)] = slot.offset[i];
            sizes[Slots.key(s, i)] = slot.maxSize[i];
        }
        STAMP.setRelease(stamps, s, (int) slot.seq);
    }

    /** The receive of slot {@code s} completed: later chunks for it are refused. */
    void retire(int s) {
        STAMP.setRelease(stamps, s, 0);
    }

    /**
     * Checks a chunk (its header already well formed) against the posted receive and returns null, filling
     * {@code into} with the destination (registration, offset in it), or what is wrong. The lane's thread.
     */
    String resolve(int seq, int index, long total, long offset, int length, Destination into) {
        int s = Slots.ofRequest(seq);
        int stamp = (int) STAMP.getAcquire(stamps, s);
        if (stamp != seq || seq == 0) {
            return "data for receive number " + Integer.toUnsignedString(seq) + ", which is not posted";
        }
        int count = counts[s];
        if (index >= count) {
            return "data for buffer " + index + " of a receive of " + count + " buffers";
        }
        int k = Slots.key(s, index);
        TcpRegistration r = registrations[k];
        long base = offsets[k];
        long size = sizes[k];
        VarHandle.loadLoadFence();                  // the fields were read before the stamp is read again
        if ((int) STAMP.getAcquire(stamps, s) != stamp) {
            return "data for receive number " + Integer.toUnsignedString(seq) + ", which completed meanwhile";
        }
        if (total > size) {
            return "a message of " + total + " bytes for a buffer of " + size
                    + " (the sender must answer TRUNCATED instead)";
        }
        if (r == null || !r.contains(base + offset, length)) {
            return "a chunk for a buffer whose registration is closed";
        }
        into.registration = r;
        into.offset = base + offset;
        return null;
    }

    /** Where a chunk's payload goes. */
    static final class Destination {
        TcpRegistration registration;
        long offset;
    }
}

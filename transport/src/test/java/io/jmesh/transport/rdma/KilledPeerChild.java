package io.jmesh.transport.rdma;

import io.jmesh.transport.core.BothWays;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.api.ListenHandle;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The peer that dies, for {@link RdmaKilledPeerTest}: a separate JVM the test starts inside a guest. It connects to
 * the survivor both ways, sends and receives until {@link #HALT_AFTER} messages went each way, and then, with sends
 * and receives still in flight, stops dead with {@code Runtime.halt} (no shutdown hooks, no close: the kernel tears
 * its queue pairs down, nothing tells the survivor). Exit code {@link #HALTED} says it got that far.
 */
final class KilledPeerChild {
    static final int HALTED = 77;
    static final int HALT_AFTER = 6;
    static final long MESSAGE = 256 * 1024;
    static final int DEPTH = 4;

    private KilledPeerChild() {
    }

    public static void main(String[] args) throws Exception {
        String survivorKey = args[0];
        String childKey = args[1];
        RdmaProvider provider = RdmaProvider.open(RdmaTestbedSupport.failureContext());
        RdmaListener listener = provider.listen();
        RdmaTestbedSupport.publishHandle(childKey, listener.handle());
        ListenHandle survivor = RdmaTestbedSupport.awaitListenHandle(survivorKey);
        Arena arena = Arena.ofShared();
        MemorySegment buf = arena.allocate(2 * DEPTH * MESSAGE, 4096);
        Registration reg = provider.register(buf);
        RdmaConnect connect = provider.connect(survivor);
        BothWays.Ends ends = BothWays.await(connect::poll, listener::accept, RdmaTestbedSupport.STEP);
        CoreSender sender = ends.sender();
        CoreReceiver receiver = ends.receiver();
        System.out.println("child: connected both ways; streaming until " + HALT_AFTER + " messages each way");
        // a ring of DEPTH receives and DEPTH sends, tags counting up, until enough went each way
        int[] recvReq = new int[DEPTH];
        int[] sendReq = new int[DEPTH];
        int nextRecv = 0;
        int nextSend = 0;
        int received = 0;
        int sent = 0;
        for (; nextRecv < DEPTH; nextRecv++) {
            recvReq[nextRecv % DEPTH] = post(receiver, reg, nextRecv);
        }
        java.util.Arrays.fill(sendReq, -1);
        long deadline = System.nanoTime() + RdmaTestbedSupport.STEP.toNanos();
        while (received < HALT_AFTER || sent < HALT_AFTER) {
            int r = receiver.test(recvReq[received % DEPTH]);
            if (r == 1) {
                received++;
                recvReq[nextRecv % DEPTH] = post(receiver, reg, nextRecv);
                nextRecv++;
            } else if (r < 0) {
                System.err.println("child: receive failed: " + receiver.error());
                System.exit(4);
            }
            int slot = nextSend % DEPTH;
            if (sendReq[slot] >= 0) {
                int t = sender.test(sendReq[slot]);
                if (t == 1) {
                    sendReq[slot] = -1;
                    sent++;
                } else if (t < 0) {
                    System.err.println("child: send failed: " + sender.error());
                    System.exit(5);
                }
            }
            if (sendReq[slot] < 0) {
                int q = sender.isend(reg, (DEPTH + slot) * MESSAGE, MESSAGE, nextSend);
                if (q >= 0) {
                    sendReq[slot] = q;
                    nextSend++;
                } else if (q != Status.NOT_READY) {
                    System.err.println("child: isend failed: " + sender.error());
                    System.exit(6);
                }
            }
            if (System.nanoTime() > deadline) {
                System.err.println("child: only " + received + " received, " + sent + " sent in time");
                System.exit(7);
            }
        }
        System.out.println("child: " + received + " received, " + sent + " sent, " + (nextRecv - received)
                + " receives posted: halting now");
        System.out.flush();
        Runtime.getRuntime().halt(HALTED);
    }

    private static int post(CoreReceiver receiver, Registration reg, int tag) {
        int slot = tag % DEPTH;
        int q = receiver.irecv(1, new Registration[] {reg}, new long[] {slot * MESSAGE}, new long[] {MESSAGE},
                new int[] {tag});
        if (q < 0) {
            System.err.println("child: irecv failed: " + Status.describe(q) + " " + receiver.error());
            System.exit(8);
        }
        return q;
    }
}

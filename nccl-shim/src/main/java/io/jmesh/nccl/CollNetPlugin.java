package io.jmesh.nccl;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Connections;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.Listener;
import io.jmesh.api.PeerConnections;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static io.jmesh.nccl.NcclErrors.fail;
import static io.jmesh.nccl.NcclErrors.invalid;

/**
 * The CollNet's upcall bodies ({@code ncclCollNetPlugin_v11} in collnet.c): NCCL's CollNet API over the net plugin's
 * fabric, devices and listeners ({@link NcclPlugin}: init, devices, listen, closeListen and finalize are its own). Like
 * NcclPlugin every method catches everything and answers an {@code ncclResult_t}. The control path (connect,
 * registration, close) is synchronized on this object, never on the NcclPlugin, whose {@code closeAll} calls {@link
 * #closeAll()} under its own lock; the data path ({@link #iallreduce}, {@link #test}) takes no lock and allocates
 * nothing.
 */
public final class CollNetPlugin {
    private static final Logger LOG = LogManager.getLogger(CollNetPlugin.class);
    static final long DEFAULT_MAX_BYTES = 1 << 20;
    private static final long MIN_MAX_BYTES = 4096;
    private static final long MAX_MAX_BYTES = 64L << 20;
    /** NCCL calls connect once and waits: the other nodes may reach theirs seconds later (their own start-up). */
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(120);

    private final NcclPlugin plugin;
    private final HandleTable<CollComm> comms = new HandleTable<>();
    private final HandleTable<MemHandle> registrations = new HandleTable<>();
    private volatile long maxBytes;

    CollNetPlugin(NcclPlugin plugin) {
        this.plugin = plugin;
    }

    /** JMESH_COLLNET_MAX_BYTES: the most one all-reduce may carry (maxCollBytes), read once. */
    long maxBytes() {
        long m = maxBytes;
        if (m == 0) {
            String v = System.getenv("JMESH_COLLNET_MAX_BYTES");
            try {
                m = v == null || v.isBlank() ? DEFAULT_MAX_BYTES : Long.parseLong(v.strip());
            } catch (NumberFormatException e) {
                m = -1;
            }
            if (m < MIN_MAX_BYTES || m > MAX_MAX_BYTES) {
                throw new IllegalArgumentException("JMESH_COLLNET_MAX_BYTES=" + v + " is not a byte count from "
                        + MIN_MAX_BYTES + " to " + MAX_MAX_BYTES + "; unset it for " + DEFAULT_MAX_BYTES);
            }
            maxBytes = m;
        }
        return m;
    }

    /** The net plugin's properties of {@code dev}, but host memory only, and maxCollBytes this CollNet's limit. */
    public int getProperties(int dev, long props) {
        try {
            int rc = plugin.getProperties(dev, props);
            if (rc == Nccl.SUCCESS) {
                // the reduction runs on the CPU: GPU memory would have to be staged anyway, so NCCL stages it
                Mem.putLong(props + 8L * ShimAbi.P_PTR_SUPPORT, Nccl.PTR_HOST);
                Mem.putLong(props + 8L * ShimAbi.P_MAX_COLL_BYTES, maxBytes());
            }
            return rc;
        } catch (Throwable t) {
            return fail("CollNet getProperties", t, Nccl.INTERNAL_ERROR);
        }
    }

    /**
     * NCCL's CollNet connect: every node's listen handle ({@code handles}, an array of {@code nranks} pointers), this
     * node's place among them, and its own listener. NCCL calls it once and waits for the communicator, so this
     * connects to and accepts from every other node before it returns, at most {@link #CONNECT_TIMEOUT}; on failure
     * the communicator is NULL and NCCL goes on without CollNet (its log says why: this WARN).
     */
    public synchronized int connect(long handles, int nranks, int rank, long listenComm, long collCommOut) {
        try {
            Mem.putLong(collCommOut, 0);
            if (nranks < 1 || rank < 0 || rank >= nranks) {
                return invalid("CollNet connect", "rank " + rank + " of " + nranks
                        + " ranks: NCCL passes a rank in [0, nranks)");
            }
            Listener l = plugin.listener(listenComm);
            if (l == null) {
                return invalid("CollNet connect", "listen comm " + listenComm + " is not a listener of this plugin: "
                        + "pass the one CollNet listen returned");
            }
            Map<Integer, byte[]> peers = new LinkedHashMap<>();
            for (int r = 0; r < nranks; r++) {
                if (r != rank) {
                    // NCCL hands the 128 bytes it exchanged; the introduction compares the listener's own encoding
                    byte[] h = Mem.getBytes(Mem.getLong(handles + 8L * r), Nccl.HANDLE_MAXSIZE);
                    peers.put(r, ListenHandle.decode(h).encode());
                }
            }
            Fabric f = plugin.fabricOrFail();
            long t0 = System.nanoTime();
            PeerConnections<Integer> mesh = Connections.connectAll(f, l, peers, CONNECT_TIMEOUT,
                    IdleStrategy.controlPlane());
            CollComm c;
            try {
                c = new CollComm(f, mesh, rank, nranks, maxBytes());
            } catch (RuntimeException | Error e) {
                CloseHelper.closeAll(NcclErrors::closeFailed, mesh);
                throw e;
            }
            c.handle = comms.add(c);
            Mem.putLong(collCommOut, c.handle);
            List<String> routes = new ArrayList<>();
            for (Integer r : mesh.peers()) {
                routes.add(r + ": " + mesh.route(r));
            }
            LOG.info("jmesh CollNet: rank {} of {} connected to every other node in {} ms ({}); one-shot all-reduce up to "
                    + "{} bytes, {} in flight", rank, nranks, (System.nanoTime() - t0) / 1_000_000, routes,
                    c.maxBytes, CollComm.WINDOW);
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("CollNet connect", t, Nccl.REMOTE_ERROR);
        }
    }

    /** Yes exactly for what {@link Reducer} reduces exactly; NCCL uses the CollNet only for those. */
    public int reduceSupport(int dataType, int redOp, long supportedOut) {
        try {
            Mem.putInt(supportedOut, Reducer.supports(dataType, redOp) ? 1 : 0);
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("CollNet reduceSupport", t, Nccl.INTERNAL_ERROR);
        }
    }

    public synchronized int regMr(long collComm, long data, long size, int type, long offset, int fd,
                                  long mhandleOut) {
        try {
            Mem.putLong(mhandleOut, 0);
            if (comms.get(collComm) == null) {
                return invalid("CollNet regMr", "unknown CollNet communicator " + collComm);
            }
            if (type != Nccl.PTR_HOST || fd >= 0) {
                return invalid("CollNet regMr", (type == Nccl.PTR_CUDA ? "CUDA memory" : "memory type " + type)
                        + (fd >= 0 ? " (dma-buf " + fd + ")" : "") + ": the CollNet reduces on the CPU and takes host "
                        + "memory only (its ptrSupport is HOST), so NCCL should have staged through host buffers");
            }
            if (data == 0 || size <= 0) {
                return invalid("CollNet regMr", "bad range 0x" + Long.toHexString(data) + " +" + size);
            }
            MemHandle m = new MemHandle(plugin.fabricOrFail().register(Mem.segment(data, size)), false);
            Mem.putLong(mhandleOut, registrations.add(m));
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("CollNet regMr", t, Nccl.SYSTEM_ERROR);
        }
    }

    public synchronized int deregMr(long collComm, long mhandle) {
        try {
            MemHandle m = registrations.remove(mhandle);
            if (m == null) {
                return invalid("CollNet deregMr", "unknown memory handle " + mhandle);
            }
            m.registration.close();
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("CollNet deregMr", t, Nccl.INTERNAL_ERROR);
        }
    }

    /**
     * Starts an all-reduce; a NULL request (and success) when every slot of the communicator is busy: NCCL calls again.
     * Arguments are checked before the operation takes its number, so a refused call leaves the ranks in step.
     */
    public int iallreduce(long collComm, long send, long recv, long count, int dataType, int redOp, long sendMh,
                          long recvMh, long requestOut) {
        try {
            Mem.putLong(requestOut, 0);
            CollComm c = comms.get(collComm);
            if (c == null) {
                return invalid("CollNet iallreduce", "unknown CollNet communicator " + collComm);
            }
            if (!Reducer.supports(dataType, redOp)) {
                return invalid("CollNet iallreduce", Reducer.typeName(dataType) + " " + Reducer.opName(redOp)
                        + " is not reduced by jmesh's CollNet (reduceSupport said no): sum, prod, max and min of the "
                        + "integer types, fp16, bf16, fp32 and fp64 only");
            }
            long bytes = count * Reducer.size(dataType);
            if (count < 0 || count > c.maxBytes || bytes > c.maxBytes) {
                return invalid("CollNet iallreduce", count + " x " + Reducer.typeName(dataType) + " = " + bytes
                        + " bytes is more than maxCollBytes " + c.maxBytes + ": raise JMESH_COLLNET_MAX_BYTES (at most "
                        + MAX_MAX_BYTES + ") or lower NCCL_BUFFSIZE, which sets the size of NCCL's CollNet steps");
            }
            MemHandle sm = registrations.get(sendMh);
            MemHandle rm = registrations.get(recvMh);
            if (send == 0 || recv == 0 || sm == null || rm == null) {
                return invalid("CollNet iallreduce", "send 0x" + Long.toHexString(send) + " (memory handle " + sendMh
                        + (sm == null ? ", not a CollNet registration" : "") + "), receive 0x" + Long.toHexString(recv)
                        + " (memory handle " + recvMh + (rm == null ? ", not a CollNet registration" : "") + "): both "
                        + "buffers must be non-NULL and registered with this CollNet's regMr");
            }
            if (sm.offsetOf(send, bytes) < 0 || rm.offsetOf(recv, bytes) < 0) {
                return invalid("CollNet iallreduce", bytes + " bytes at send 0x" + Long.toHexString(send)
                        + " or receive 0x" + Long.toHexString(recv) + " are not inside their registrations (" + sm
                        + ", " + rm + ")");
            }
            long s = c.start(send, recv, count, dataType, redOp, sm);
            if (s >= 0) {
                Mem.putLong(requestOut, collComm << 32 | (s & 0xFFFF_FFFFL));
            }
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("CollNet iallreduce", t, Nccl.INTERNAL_ERROR);
        }
    }

    public int test(long request, long doneOut, long sizeOut) {
        try {
            Mem.putInt(doneOut, 0);
            CollComm c = comms.get(request >>> 32);
            long s = c == null ? -1 : c.seqOf((int) request);
            int rc = s < 0 ? -2 : c.test(s);
            if (rc == 1) {
                Mem.putInt(doneOut, 1);
                if (sizeOut != 0) {
                    Mem.putInt(sizeOut, (int) c.bytes(s));
                }
                return Nccl.SUCCESS;
            }
            if (rc == 0) {
                return Nccl.SUCCESS;
            }
            if (rc == -2) {
                return invalid("CollNet test", "request 0x" + Long.toHexString(request) + " is no operation in flight "
                        + "(already reported done, or of a closed communicator)");
            }
            LOG.warn("jmesh {} -> ncclRemoteError", c.failure(s));
            return Nccl.REMOTE_ERROR;
        } catch (Throwable t) {
            return fail("CollNet test", t, Nccl.INTERNAL_ERROR);
        }
    }

    public synchronized int closeColl(long collComm) {
        try {
            CollComm c = comms.remove(collComm);
            if (c == null) {
                return invalid("CollNet closeColl", "unknown CollNet communicator " + collComm);
            }
            c.close();
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("CollNet closeColl", t, Nccl.INTERNAL_ERROR);
        }
    }

    /** Closes what NCCL left open: communicators, then registrations (before the fabric, which the caller closes). */
    synchronized void closeAll() {
        List<AutoCloseable> all = new ArrayList<>();
        for (CollComm c : comms.drain()) {
            all.add(c::close);
        }
        for (MemHandle m : registrations.drain()) {
            all.add(m.registration);
        }
        if (!all.isEmpty()) {
            LOG.info("closing what NCCL left open of the CollNet: {} communicator(s) and registration(s)", all.size());
        }
        CloseHelper.closeAll(NcclErrors::closeFailed, all);
    }

    /** For tests: open communicators and registrations. */
    synchronized List<Integer> openCounts() {
        return List.of(comms.size(), registrations.size());
    }
}

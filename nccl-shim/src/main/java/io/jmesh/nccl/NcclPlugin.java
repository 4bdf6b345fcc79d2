package io.jmesh.nccl;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.Listener;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static io.jmesh.nccl.NcclErrors.badHandle;
import static io.jmesh.nccl.NcclErrors.badRange;
import static io.jmesh.nccl.NcclErrors.fail;
import static io.jmesh.nccl.NcclErrors.failed;

/**
 * The adapter from NCCL's net-plugin API onto the jmesh transport ({@link Fabric}). Each public method is the body of
 * one upcall of {@code libnccl-net-jmesh.so}: arguments are NCCL's, with pointers as addresses, and the result is an
 * {@code ncclResult_t}. Nothing escapes: every method catches everything, logs it through NCCL's logger and returns an
 * error code, because an exception escaping an upcall would kill the process.
 *
 * <p>The data path ({@link #isend}, {@link #irecv}, {@link #test}) takes no lock and allocates nothing: comms,
 * registrations and requests are array slots ({@link HandleTable}), argument arrays are preallocated per comm. The
 * control path (init, listen, connect, accept, registration, close, finalize) is synchronized on the plugin.
 *
 * <p>One {@link Fabric} serves every NCCL communicator of the process: it is opened by the first init and closed by the
 * finalize of the last one, which also closes whatever NCCL left open.
 */
public final class NcclPlugin {
    private static final Logger LOG = LogManager.getLogger(NcclPlugin.class);

    private final Context context;
    /** The CollNet's upcall bodies: over this plugin's fabric and listeners; closed before them. */
    final CollNetPlugin collNet = new CollNetPlugin(this);
    private NcclTuning tuning = new NcclTuning(0, 0);
    private final Arena strings = Arena.ofShared();
    private volatile Fabric fabric; // read without the lock by the CollNet's connect
    private List<NcclDevice> devices = List.of();
    private MemorySegment[] deviceNames = new MemorySegment[0];
    private MemorySegment[] devicePciPaths = new MemorySegment[0];
    private int contexts;
    private long nextContext = 1;

    private final HandleTable<Listener> listeners = new HandleTable<>();
    private final HandleTable<Comm> comms = new HandleTable<>();
    private final HandleTable<MemHandle> registrations = new HandleTable<>();
    /** Connects in progress, by the listener's handle bytes (unique: each carries a random per-listener secret). */
    private final Map<ByteBuffer, PendingConnect> pending = new HashMap<>();

    public NcclPlugin(Context context) {
        this.context = context;
    }

    // ---- init, devices, finalize --------------------------------------------------------------------------------

    /** Opens a fabric with {@code ctx} and finds its devices (the fabric is closed again on failure). */
    private Fabric openFabric(Context ctx) {
        Fabric f = Fabric.open(ctx);
        try {
            devices = NcclDevice.of(f.provider(), f.links(), ctx.gidIndex());
            if (devices.isEmpty()) {
                throw new IllegalStateException("the " + f.provider() + " provider has no usable link");
            }
        } catch (RuntimeException e) {
            f.close();
            throw e;
        }
        return f;
    }

    /** NCCL's init: opens the fabric on the first call; writes a context id to {@code ctxOut} (if not 0). */
    public synchronized int init(long ctxOut, long commId, int trafficClass, int apiVersion) {
        try {
            if (fabric == null) {
                tuning = NcclTuning.from(System.getenv());
                fabric = openFabric(context);
                if (context.eagerThreshold() > 0 && gpuCapable()) { // the CPU cannot copy into GPU receives
                    LOG.info(NcclLogAppender.INIT, "jmesh: GPU memory can be registered: JMESH_EAGER_THRESHOLD=0");
                    fabric.close();
                    fabric = null;
                    fabric = openFabric(context.eagerThreshold(0));
                }
                deviceNames = new MemorySegment[devices.size()];
                devicePciPaths = new MemorySegment[devices.size()];
                for (int i = 0; i < devices.size(); i++) {
                    NcclDevice d = devices.get(i);
                    deviceNames[i] = strings.allocateFrom(d.name());
                    devicePciPaths[i] = d.pciPath() == null ? MemorySegment.NULL : strings.allocateFrom(d.pciPath());
                }
                LOG.info(NcclLogAppender.INIT, "jmesh NCCL plugin v{} API: {} provider, {} device(s): {}; NCCL is told "
                        + "{} Mb/s and {} us", apiVersion, fabric.provider(), devices.size(), devices,
                        tuning.speedFor(devices.getFirst().speedMbps()), tuning.latencyUs());
            }
            contexts++;
            long ctx = nextContext++;
            if (ctxOut != 0) {
                Mem.putLong(ctxOut, ctx);
            }
            LOG.debug("init: context {} for communicator 0x{} (traffic class {})", ctx, Long.toHexString(commId),
                    trafficClass);
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("init", t, Nccl.SYSTEM_ERROR);
        }
    }

    public int devices(long ndevOut) {
        try {
            Mem.putInt(ndevOut, devices.size());
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("devices", t, Nccl.INTERNAL_ERROR);
        }
    }

    public int getProperties(int dev, long props) {
        try {
            List<NcclDevice> ds = devices;
            if (dev < 0 || dev >= ds.size()) {
                LOG.warn("getProperties: no device {} (jmesh has {})", dev, ds.size());
                return Nccl.INVALID_ARGUMENT;
            }
            NcclDevice d = ds.get(dev);
            NcclProperties.write(props, dev, d, deviceNames[dev], devicePciPaths[dev], gpuCapable(d), tuning);
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("getProperties", t, Nccl.INTERNAL_ERROR);
        }
    }

    /**
     * NCCL's finalize for one context. After the last one everything NCCL left open is closed, then the fabric.
     *
     * @return the contexts still open (>= 0), or a negated ncclResult_t
     */
    public synchronized int finalizeContext(long ctx) {
        try {
            if (contexts > 0) {
                contexts--;
            }
            if (contexts == 0) {
                closeAll();
            }
            return contexts;
        } catch (Throwable t) {
            return -fail("finalize", t, Nccl.INTERNAL_ERROR);
        }
    }

    /** Closes connects in progress, comms, listeners, registrations and the fabric, in that order. */
    synchronized void closeAll() {
        int open = pending.size() + comms.size() + listeners.size() + registrations.size();
        if (open > 0) {
            LOG.info("closing what NCCL left open: {} connect(s) in progress, {} comm(s), {} listener(s), {} "
                    + "registration(s)", pending.size(), comms.size(), listeners.size(), registrations.size());
        }
        collNet.closeAll();
        List<AutoCloseable> all = new ArrayList<>();
        for (PendingConnect p : pending.values()) {
            all.add(p.connector());
        }
        pending.clear();
        for (Comm c : comms.drain()) {
            all.add(c::close);
        }
        all.addAll(listeners.drain());
        for (MemHandle m : registrations.drain()) {
            all.add(m.registration);
        }
        CloseHelper.closeAll(NcclErrors::closeFailed, all);
        if (fabric != null) {
            Fabric f = fabric;
            fabric = null;
            devices = List.of();
            CloseHelper.closeAll(NcclErrors::closeFailed, f);
            LOG.info(NcclLogAppender.INIT, "jmesh NCCL plugin: last context finalized, transport closed");
            StepTrace.printTotals(System.err);
        }
    }

    /** Frees the device strings; the plugin is unusable afterwards. */
    synchronized void release() {
        closeAll();
        strings.close();
    }

    // ---- listen, connect, accept ----------------------------------------------------------------------------------

    public synchronized int listen(long ctx, int dev, long handleOut, long listenCommOut) {
        try {
            Fabric f = fabricOrFail();
            Listener l = f.listen();
            byte[] h = l.handle();
            if (h.length > Nccl.HANDLE_MAXSIZE) {
                l.close();
                throw new IllegalStateException("listen handle of " + h.length + " bytes exceeds NCCL's "
                        + Nccl.HANDLE_MAXSIZE);
            }
            Mem.fill(handleOut, Nccl.HANDLE_MAXSIZE, (byte) 0);
            Mem.putBytes(handleOut, h, h.length);
            long handle = listeners.add(l);
            Mem.putLong(listenCommOut, handle);
            LOG.debug("listen on dev {}: {}", dev, l.handleText());
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("listen", t, Nccl.SYSTEM_ERROR);
        }
    }

    /**
     * NCCL's connect: never blocks. The first call starts the connect, later calls (same handle) poll it; {@code
     * *sendComm} stays NULL until the connection is up.
     */
    public synchronized int connect(long ctx, int dev, long handleAddress, long sendCommOut) {
        ByteBuffer key = null;
        try {
            Mem.putLong(sendCommOut, 0);
            Fabric f = fabricOrFail();
            byte[] bytes = Mem.getBytes(handleAddress, Nccl.HANDLE_MAXSIZE);
            key = ByteBuffer.wrap(bytes);
            PendingConnect p = pending.get(key);
            if (p == null) {
                p = PendingConnect.start(f, devices, dev, bytes);
                pending.put(key, p);
            }
            Sender s = p.connector().poll();
            if (s == null) {
                return Nccl.SUCCESS;
            }
            pending.remove(key);
            SendComm c = new SendComm(p.dev(), s);
            c.handle = comms.add(c);
            Mem.putLong(sendCommOut, c.handle);
            LOG.info("connected on dev {}: {}{}", dev, p.connector().route(), p.why());
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            if (key != null) {
                PendingConnect p = pending.remove(key);
                if (p != null) {
                    CloseHelper.closeAll(NcclErrors::closeFailed, p.connector());
                }
            }
            return fail("connect", t, Nccl.REMOTE_ERROR);
        }
    }

    public synchronized int accept(long listenComm, long recvCommOut) {
        try {
            Mem.putLong(recvCommOut, 0);
            Listener l = listeners.get(listenComm);
            if (l == null) {
                LOG.warn("accept: unknown listen comm {}", listenComm);
                return Nccl.INVALID_ARGUMENT;
            }
            Receiver r = l.accept();
            if (r == null) {
                return Nccl.SUCCESS;
            }
            RecvComm c = new RecvComm(-1, r);
            c.handle = comms.add(c);
            Mem.putLong(recvCommOut, c.handle);
            LOG.debug("accepted a connection on listen comm {}", listenComm);
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("accept", t, Nccl.REMOTE_ERROR);
        }
    }

    /** Whether NCCL's device can take GPU memory: its RDMA device (the name without NCCL's ":port") by dma-buf. */
    private boolean gpuCapable(NcclDevice d) {
        return !d.links().isEmpty() && fabricOrFail().supportsDmaBuf(d.links().getFirst().device());
    }

    /** Whether any device advertises GPU memory (dma-buf) in its properties. */
    private boolean gpuCapable() {
        return devices.stream().anyMatch(this::gpuCapable);
    }

    /** A listener NCCL holds (the CollNet's connect accepts on it), or null. */
    Listener listener(long listenComm) {
        return listeners.get(listenComm);
    }

    Fabric fabricOrFail() {
        Fabric f = fabric;
        if (f == null) {
            throw new IllegalStateException("the plugin is not initialized (NCCL called it after finalize)");
        }
        return f;
    }

    // ---- memory registration --------------------------------------------------------------------------------------

    public synchronized int regMr(long comm, long data, long size, int type, long offset, int fd, long mhandleOut) {
        try {
            Mem.putLong(mhandleOut, 0);
            if (type != Nccl.PTR_HOST && type != Nccl.PTR_CUDA) {
                LOG.warn("regMr: unknown memory type {} (NCCL passes HOST {} or CUDA {})", type, Nccl.PTR_HOST,
                        Nccl.PTR_CUDA);
                return Nccl.INVALID_ARGUMENT;
            }
            if (data == 0 || size <= 0) {
                LOG.warn("regMr: bad range {} +{}", Long.toHexString(data), size);
                return Nccl.INVALID_ARGUMENT;
            }
            boolean gpu = type == Nccl.PTR_CUDA;
            if (gpu && !gpuCapable()) {
                LOG.warn("regMr: CUDA memory, but no jmesh device can register GPU memory (ptrSupport is HOST): "
                        + "NCCL should have staged it through host buffers; this is a bug in the caller");
                return Nccl.INVALID_ARGUMENT;
            }
            Registration r;
            if (gpu && fd >= 0) {
                r = fabricOrFail().registerDmaBuf(fd, offset, size, data);
            } else if (fd >= 0) {
                LOG.warn("regMr: a dma-buf (fd {}) for host memory: NCCL passes dma-bufs only for CUDA memory", fd);
                return Nccl.INVALID_ARGUMENT;
            } else {
                // host memory, or CUDA memory without a dma-buf: ibv_reg_mr, which only nvidia-peermem makes work
                r = fabricOrFail().register(Mem.segment(data, size));
            }
            long handle = registrations.add(new MemHandle(r, gpu));
            Mem.putLong(mhandleOut, handle);
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("regMr", t, Nccl.SYSTEM_ERROR);
        }
    }

    public synchronized int deregMr(long comm, long mhandle) {
        try {
            MemHandle m = registrations.remove(mhandle);
            if (m == null) {
                LOG.warn("deregMr: unknown memory handle {}", mhandle);
                return Nccl.INVALID_ARGUMENT;
            }
            m.registration.close();
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("deregMr", t, Nccl.INTERNAL_ERROR);
        }
    }

    // ---- data path: no locks, no allocation -----------------------------------------------------------------------

    public int isend(long sendComm, long data, long size, int tag, long mhandle, long requestOut) {
        try {
            Comm c = comms.get(sendComm);
            MemHandle m = registrations.get(mhandle);
            if (!(c instanceof SendComm s) || m == null) {
                return badHandle("isend", sendComm, mhandle);
            }
            long off = m.offsetOf(data, size);
            if (off < 0 || size > Nccl.MAX_MESSAGE_BYTES) {
                return badRange("isend", data, size, m);
            }
            int id = s.isend(m, off, size, tag);
            if (id >= 0) {
                Mem.putLong(requestOut, Comm.request(sendComm, id));
                return Nccl.SUCCESS;
            }
            Mem.putLong(requestOut, 0);
            return id == Status.NOT_READY ? Nccl.SUCCESS : failed("isend", s, id);
        } catch (Throwable t) {
            return fail("isend", t, Nccl.INTERNAL_ERROR);
        }
    }

    public int irecv(long recvComm, int n, long data, long sizes, long tags, long mhandles, long requestOut) {
        try {
            Comm c = comms.get(recvComm);
            if (!(c instanceof RecvComm r)) {
                return badHandle("irecv", recvComm, 0);
            }
            if (n < 1 || n > Nccl.MAX_RECVS) {
                LOG.warn("irecv: {} buffers, jmesh takes 1 to {}", n, Nccl.MAX_RECVS);
                return Nccl.INVALID_ARGUMENT;
            }
            for (int i = 0; i < n; i++) {
                long ptr = Mem.getLong(data + 8L * i);
                long size = Mem.getLong(sizes + 8L * i);
                long mh = Mem.getLong(mhandles + 8L * i);
                MemHandle m = registrations.get(mh);
                if (m == null) {
                    java.util.Arrays.fill(r.registrations, null);
                    return badHandle("irecv", recvComm, mh);
                }
                long off = m.offsetOf(ptr, size);
                if (off < 0) {
                    java.util.Arrays.fill(r.registrations, null);
                    return badRange("irecv", ptr, size, m);
                }
                r.registrations[i] = m.registration;
                r.offsets[i] = off;
                r.maxSizes[i] = size;
                r.tags[i] = Mem.getInt(tags + 4L * i);
            }
            int id = r.irecv(n);
            if (id >= 0) {
                Mem.putLong(requestOut, Comm.request(recvComm, id));
                return Nccl.SUCCESS;
            }
            Mem.putLong(requestOut, 0);
            return id == Status.NOT_READY ? Nccl.SUCCESS : failed("irecv", r, id);
        } catch (Throwable t) {
            return fail("irecv", t, Nccl.INTERNAL_ERROR);
        }
    }

    /**
     * NCCL's flush. NCCL flushes only receives into GPU memory; jmesh registers host memory only (ptrSupport HOST),
     * where received data is visible once test reported the receive done, so there is nothing to wait for: the request
     * is NULL, which NCCL reads as complete. (With GPU memory registration in the transport, this becomes {@link
     * Receiver#iflush}, an RDMA READ through a loopback QP, exactly when such a buffer is flushed.)
     */
    public int iflush(long recvComm, int n, long data, long sizes, long mhandles, long requestOut) {
        try {
            Mem.putLong(requestOut, 0);
            Comm c = comms.get(recvComm);
            if (!(c instanceof RecvComm r)) {
                return badHandle("iflush", recvComm, 0);
            }
            if (n < 1 || n > Nccl.MAX_RECVS) {
                LOG.warn("iflush: {} buffers, jmesh takes 1 to {}", n, Nccl.MAX_RECVS);
                return Nccl.INVALID_ARGUMENT;
            }
            boolean gpu = false;
            for (int i = 0; i < n; i++) {
                long ptr = Mem.getLong(data + 8L * i);
                long size = Mem.getInt(sizes + 4L * i);
                MemHandle m = registrations.get(Mem.getLong(mhandles + 8L * i));
                if (m == null) {
                    java.util.Arrays.fill(r.registrations, null);
                    return badHandle("iflush", recvComm, Mem.getLong(mhandles + 8L * i));
                }
                long off = m.offsetOf(ptr, size);
                if (off < 0) {
                    java.util.Arrays.fill(r.registrations, null);
                    return badRange("iflush", ptr, size, m);
                }
                gpu |= m.gpu;
                r.registrations[i] = m.registration;
                r.offsets[i] = off;
                r.maxSizes[i] = size;
            }
            if (!gpu) {
                // host memory is consistent once test() reported the receive: nothing to flush (a NULL request)
                java.util.Arrays.fill(r.registrations, null);
                return Nccl.SUCCESS;
            }
            int id = r.iflush(n);
            if (id >= 0) {
                Mem.putLong(requestOut, Comm.request(recvComm, id));
                return Nccl.SUCCESS;
            }
            // NCCL reads a NULL flush request as "done", so a flush that cannot start is an error, not a retry
            return failed("iflush", r, id);
        } catch (Throwable t) {
            return fail("iflush", t, Nccl.INTERNAL_ERROR);
        }
    }

    public int test(long request, long doneOut, long sizesOut) {
        try {
            Comm c = comms.get(Comm.commOf(request));
            if (c == null) {
                LOG.warn("test: request 0x{} belongs to no open comm", Long.toHexString(request));
                return Nccl.INVALID_ARGUMENT;
            }
            int rc = c.test(Comm.idOf(request), sizesOut);
            if (rc >= 0) {
                Mem.putInt(doneOut, rc);
                return Nccl.SUCCESS;
            }
            Mem.putInt(doneOut, 0);
            return failed("test", c, rc);
        } catch (Throwable t) {
            return fail("test", t, Nccl.INTERNAL_ERROR);
        }
    }

    // ---- close ----------------------------------------------------------------------------------------------------

    public synchronized int closeSend(long sendComm) {
        return closeComm("closeSend", sendComm);
    }

    public synchronized int closeRecv(long recvComm) {
        return closeComm("closeRecv", recvComm);
    }

    private int closeComm(String what, long handle) {
        try {
            Comm c = comms.remove(handle);
            if (c == null) {
                LOG.warn("{}: unknown comm {}", what, handle);
                return Nccl.INVALID_ARGUMENT;
            }
            c.close();
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail(what, t, Nccl.INTERNAL_ERROR);
        }
    }

    public synchronized int closeListen(long listenComm) {
        try {
            Listener l = listeners.remove(listenComm);
            if (l == null) {
                LOG.warn("closeListen: unknown listen comm {}", listenComm);
                return Nccl.INVALID_ARGUMENT;
            }
            l.close();
            return Nccl.SUCCESS;
        } catch (Throwable t) {
            return fail("closeListen", t, Nccl.INTERNAL_ERROR);
        }
    }

    // ---- for tests -----------------------------------------------------------------------------------------------

    /** For tests: the number of open objects (comms, listeners, registrations, connects in progress). */
    synchronized List<Integer> openCounts() {
        return List.of(comms.size(), listeners.size(), registrations.size(), pending.size());
    }
}

package io.jmesh.verbs;

import io.jmesh.posix.Errno;
import io.jmesh.verbs.ffi.ibv_context;
import io.jmesh.verbs.ffi.ibv_gid_entry;
import io.jmesh.verbs.ffi.ibv_port_attr;
import io.jmesh.verbs.ffi.verbs_context;
import io.jmesh.verbs.ffi.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The control path of libibverbs: every call that can fail through errno goes through a downcall that captures errno,
 * and a failure becomes a {@link VerbsException} that names the call, the object and the fix. The macros and static
 * inlines of verbs.h that jextract cannot bind ({@code ibv_query_port}, {@code ibv_reg_mr}, {@code ibv_query_gid_ex},
 * {@code ibv_query_gid_table}) are implemented here with the C macros' semantics. The data path is {@link DataPath}.
 *
 * <p>Obtain the one instance with {@link #load()}: it checks that the library loads before any generated class is
 * touched, so a machine without libibverbs gets a {@link VerbsUnavailableException}, never an
 * {@code ExceptionInInitializerError}.
 *
 * <pre>{@code
 * Verbs verbs = Verbs.load();
 * try (Verbs.DeviceList devices = verbs.deviceList()) {
 *     for (int i = 0; i < devices.count(); i++) System.out.println(devices.name(i));
 * }
 * }</pre>
 */
public final class Verbs {
    private static final Linker LINKER = Linker.nativeLinker();
    private static volatile Verbs instance;

    private final MethodHandle getDeviceList;
    private final MethodHandle openDevice;
    private final MethodHandle allocPd;
    private final MethodHandle regMr;
    private final MethodHandle regMrIova2;
    private final MethodHandle regDmabufMr;
    private final MethodHandle createCq;
    private final MethodHandle createQp;
    private final MethodHandle queryGidTable;

    private Verbs() {
        getDeviceList = capturing(verbs_h.ibv_get_device_list$address(), verbs_h.ibv_get_device_list$descriptor());
        openDevice = capturing(verbs_h.ibv_open_device$address(), verbs_h.ibv_open_device$descriptor());
        allocPd = capturing(verbs_h.ibv_alloc_pd$address(), verbs_h.ibv_alloc_pd$descriptor());
        regMr = capturing(verbs_h.ibv_reg_mr$address(), verbs_h.ibv_reg_mr$descriptor());
        regMrIova2 = capturing(verbs_h.ibv_reg_mr_iova2$address(), verbs_h.ibv_reg_mr_iova2$descriptor());
        regDmabufMr = capturing(verbs_h.ibv_reg_dmabuf_mr$address(), verbs_h.ibv_reg_dmabuf_mr$descriptor());
        createCq = capturing(verbs_h.ibv_create_cq$address(), verbs_h.ibv_create_cq$descriptor());
        createQp = capturing(verbs_h.ibv_create_qp$address(), verbs_h.ibv_create_qp$descriptor());
        queryGidTable = capturing(verbs_h._ibv_query_gid_table$address(), verbs_h._ibv_query_gid_table$descriptor());
    }

    /**
     * @return the process-wide instance
     * @throws VerbsUnavailableException when libibverbs.so.1 cannot be loaded, naming the fix
     */
    public static Verbs load() {
        Verbs v = instance;
        if (v == null) {
            Libibverbs.requireLoadable();
            synchronized (Verbs.class) {
                v = instance;
                if (v == null) {
                    v = new Verbs();
                    instance = v;
                }
            }
        }
        return v;
    }

    private static MethodHandle capturing(MemorySegment address, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(address, descriptor, Linker.Option.captureCallState("errno"));
    }

    private static Object call(MethodHandle handle, MemorySegment capture, Object... args) {
        Object[] all = new Object[args.length + 1];
        all[0] = capture;
        System.arraycopy(args, 0, all, 1, args.length);
        try {
            return handle.invokeWithArguments(all);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static VerbsException failure(String call, String on, int errno) {
        String hint = ErrnoHints.hint(call, errno);
        return new VerbsException(call + (on.isEmpty() ? "" : " on " + on) + " failed: " + Errno.describe(errno)
                + (hint.isEmpty() ? "" : "; " + hint), errno);
    }

    private MemorySegment pointerCall(MethodHandle handle, String call, String on, Object... args) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(Errno.CAPTURE_LAYOUT);
            MemorySegment result = (MemorySegment) call(handle, capture, args);
            if (result.equals(MemorySegment.NULL)) {
                throw failure(call, on, Errno.read(capture));
            }
            return result;
        }
    }

    // ---------------------------------------------------------------- devices

    /**
     * The RDMA devices of this machine. An empty list means the kernel supports RDMA but has no device.
     *
     * @throws VerbsUnavailableException when the kernel has no RDMA support (ENOSYS), naming the fix
     */
    public DeviceList deviceList() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(Errno.CAPTURE_LAYOUT);
            MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment list = (MemorySegment) call(getDeviceList, capture, count);
            if (list.equals(MemorySegment.NULL)) {
                int errno = Errno.read(capture);
                if (errno == Errno.ENOSYS) {
                    throw new VerbsUnavailableException("no RDMA devices: this kernel has no RDMA support "
                            + "(ibv_get_device_list: " + Errno.describe(errno) + "); load your NIC's RDMA driver and "
                            + "ib_uverbs (mlx5_ib for ConnectX; 'modprobe rdma_rxe' and 'rdma link add rxe0 type rxe "
                            + "netdev eth0' for Soft-RoCE), or use jmesh's TCP provider (JMESH_PROVIDER=tcp)", errno);
                }
                throw failure("ibv_get_device_list", "", errno);
            }
            int n = count.get(ValueLayout.JAVA_INT, 0);
            return new DeviceList(list.reinterpret(ValueLayout.ADDRESS.byteSize() * (n + 1L)), n);
        }
    }

    /** An owned {@code ibv_device**} list; {@link #close()} frees it (the devices opened from it stay open). */
    public static final class DeviceList implements AutoCloseable {
        private final MemorySegment list;
        private final int count;
        private boolean closed;

        DeviceList(MemorySegment list, int count) {
            this.list = list;
            this.count = count;
        }

        public int count() {
            return count;
        }

        /** The {@code struct ibv_device*} at index i. */
        public MemorySegment device(int i) {
            return list.getAtIndex(ValueLayout.ADDRESS, java.util.Objects.checkIndex(i, count));
        }

        /** The kernel name, e.g. "mlx5_0" or "rxe0". */
        public String name(int i) {
            return verbs_h.ibv_get_device_name(device(i)).getString(0);
        }

        /** The node GUID in host byte order. */
        public long guid(int i) {
            return Long.reverseBytes(verbs_h.ibv_get_device_guid(device(i)));
        }

        @Override
        public void close() {
            if (!closed) {
                closed = true;
                verbs_h.ibv_free_device_list(list);
            }
        }
    }

    /** {@code ibv_open_device}. @throws VerbsException naming the device and the errno */
    public MemorySegment openDevice(MemorySegment device, String name) {
        return pointerCall(openDevice, "ibv_open_device", name, device).reinterpret(ibv_context.sizeof());
    }

    /** {@code ibv_close_device}; returns 0 or the errno. */
    public int closeDevice(MemorySegment context) {
        return verbs_h.ibv_close_device(context);
    }

    // ---------------------------------------------------------------- ports and GIDs

    /**
     * The {@code ibv_query_port} macro of verbs.h: the provider's {@code verbs_context.query_port} with the full
     * {@code ibv_port_attr} when the context is a {@code verbs_context} that has it, otherwise the exported compat
     * symbol on a zeroed struct (which leaves {@code port_cap_flags2} zero).
     *
     * @param attr at least {@code ibv_port_attr.sizeof()} bytes
     * @return 0 or the errno
     */
    public int queryPort(MemorySegment context, int port, MemorySegment attr) {
        MemorySegment vctx = verbsContext(context);
        if (vctx != null) {
            MemorySegment fn = verbs_context.query_port(vctx);
            if (!fn.equals(MemorySegment.NULL)) {
                return verbs_context.query_port.invoke(fn, context, (byte) port, attr, ibv_port_attr.sizeof());
            }
        }
        attr.asSlice(0, ibv_port_attr.sizeof()).fill((byte) 0);
        return verbs_h.ibv_query_port(context, (byte) port, attr);
    }

    /**
     * {@code verbs_get_ctx_op(ctx, query_port)}: the enclosing {@code verbs_context} when the context is one (its
     * {@code abi_compat} is {@code UINTPTR_MAX}) and is large enough to hold {@code query_port}, else null.
     */
    static MemorySegment verbsContext(MemorySegment context) {
        MemorySegment ctx = context.reinterpret(ibv_context.sizeof());
        if (ibv_context.abi_compat(ctx).address() != -1L) {
            return null;
        }
        MemorySegment vctx = MemorySegment.ofAddress(ctx.address() - verbs_context.context$offset())
                .reinterpret(verbs_context.sizeof());
        long needed = verbs_context.sizeof() - verbs_context.query_port$offset();
        return Long.compareUnsigned(verbs_context.sz(vctx), needed) >= 0 ? vctx : null;
    }

    /**
     * The {@code ibv_query_gid_ex} inline: one GID table entry with its type and netdev.
     *
     * @param entry at least {@code ibv_gid_entry.sizeof()} bytes
     * @return 0, or the errno ({@code ENODATA} for an empty slot)
     */
    public int queryGidEx(MemorySegment context, int port, int index, MemorySegment entry) {
        return verbs_h._ibv_query_gid_ex(context, port, index, entry, 0, ibv_gid_entry.sizeof());
    }

    /**
     * The {@code ibv_query_gid_table} inline: every valid GID entry of every port.
     *
     * @return the number of entries written
     * @throws VerbsException on failure, naming the device and the errno
     */
    public long queryGidTable(MemorySegment context, MemorySegment entries, long maxEntries, String device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(Errno.CAPTURE_LAYOUT);
            long n = (long) call(queryGidTable, capture, context, entries, maxEntries, 0, ibv_gid_entry.sizeof());
            if (n < 0) {
                throw failure("ibv_query_gid_table", device, (int) -n);
            }
            return n;
        }
    }

    // ---------------------------------------------------------------- PD and MR

    public MemorySegment allocPd(MemorySegment context, String device) {
        return pointerCall(allocPd, "ibv_alloc_pd", device, context);
    }

    /** {@code ibv_dealloc_pd}; returns 0 or the errno (EBUSY while QPs, CQs or MRs still use it). */
    public int deallocPd(MemorySegment pd) {
        return verbs_h.ibv_dealloc_pd(pd);
    }

    /**
     * The {@code ibv_reg_mr} macro: C compiles a call with access flags that carry none of the
     * {@code IBV_ACCESS_OPTIONAL_RANGE} bits to the exported {@code ibv_reg_mr}, and any other to
     * {@code ibv_reg_mr_iova2} with iova = addr.
     *
     * @throws VerbsException naming the range and the errno (ENOMEM: the memlock limit, with the fix)
     */
    public MemorySegment regMr(MemorySegment pd, MemorySegment addr, long length, int access) {
        String on = "0x" + Long.toHexString(addr.address()) + "+" + length;
        MemorySegment mr = (access & verbs_h.IBV_ACCESS_OPTIONAL_RANGE()) == 0
                ? pointerCall(regMr, "ibv_reg_mr", on, pd, addr, length, access)
                : pointerCall(regMrIova2, "ibv_reg_mr", on, pd, addr, length, addr.address(), access);
        return mr.reinterpret(io.jmesh.verbs.ffi.ibv_mr.sizeof());
    }

    /** {@code ibv_reg_dmabuf_mr}: registers a dma-buf (GPU memory) by file descriptor and offset. */
    public MemorySegment regDmabufMr(MemorySegment pd, long offset, long length, long iova, int fd, int access) {
        return pointerCall(regDmabufMr, "ibv_reg_dmabuf_mr", "fd " + fd + " offset " + offset + "+" + length,
                pd, offset, length, iova, fd, access).reinterpret(io.jmesh.verbs.ffi.ibv_mr.sizeof());
    }

    /** {@code ibv_dereg_mr}; returns 0 or the errno. */
    public int deregMr(MemorySegment mr) {
        return verbs_h.ibv_dereg_mr(mr);
    }

    // ---------------------------------------------------------------- CQ

    /** {@code ibv_create_cq} without a completion channel: jmesh polls its CQs and never waits on an event. */
    public MemorySegment createCq(MemorySegment context, int entries, String device) {
        return pointerCall(createCq, "ibv_create_cq", device, context, entries, MemorySegment.NULL, MemorySegment.NULL,
                0).reinterpret(io.jmesh.verbs.ffi.ibv_cq.sizeof());
    }

    public int destroyCq(MemorySegment cq) {
        return verbs_h.ibv_destroy_cq(cq);
    }

    // ---------------------------------------------------------------- QP

    public MemorySegment createQp(MemorySegment pd, MemorySegment initAttr, String device) {
        return pointerCall(createQp, "ibv_create_qp", device, pd, initAttr)
                .reinterpret(io.jmesh.verbs.ffi.ibv_qp.sizeof());
    }

    /** {@code ibv_modify_qp}; returns 0 or the errno (the call reports errno as its result). */
    public int modifyQp(MemorySegment qp, MemorySegment attr, int mask) {
        return verbs_h.ibv_modify_qp(qp, attr, mask);
    }

    public int destroyQp(MemorySegment qp) {
        return verbs_h.ibv_destroy_qp(qp);
    }

    // ---------------------------------------------------------------- strings

    public String wcStatusString(int status) {
        return verbs_h.ibv_wc_status_str(status).getString(0);
    }

    public String portStateString(int state) {
        return verbs_h.ibv_port_state_str(state).getString(0);
    }
}

package io.jmesh.transport.verbs;

import io.jmesh.verbs.DataPath;
import io.jmesh.posix.Errno;
import io.jmesh.verbs.Verbs;
import io.jmesh.verbs.VerbsException;
import io.jmesh.verbs.ffi.ibv_port_attr;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * An open RDMA device ({@code ibv_context}) and the provider's data-path entry points for it. It owns the context:
 * {@link #close()} closes it, after everything made from it (PDs, CQs, QPs, MRs) has been closed by its owners.
 *
 * <pre>{@code
 * try (DeviceContext dev = DeviceContext.open(Verbs.load(), "rxe0");
 *      ProtectionDomain pd = new ProtectionDomain(dev)) { ... }
 * }</pre>
 */
public final class DeviceContext implements AutoCloseable {
    private final Verbs verbs;
    private final String name;
    private final MemorySegment context;
    private final DataPath dataPath;
    private boolean closed;

    private DeviceContext(Verbs verbs, String name, MemorySegment context) {
        this.verbs = verbs;
        this.name = name;
        this.context = context;
        this.dataPath = DataPath.of(context);
    }

    /**
     * Opens the device with this kernel name.
     *
     * @throws VerbsException when there is no such device (listing the ones there are) or it cannot be opened
     */
    public static DeviceContext open(Verbs verbs, String name) {
        try (Verbs.DeviceList list = verbs.deviceList()) {
            List<String> names = new ArrayList<>();
            for (int i = 0; i < list.count(); i++) {
                if (list.name(i).equals(name)) {
                    MemorySegment ctx = verbs.openDevice(list.device(i), name);
                    try {
                        return new DeviceContext(verbs, name, ctx);
                    } catch (RuntimeException e) {
                        verbs.closeDevice(ctx);
                        throw e;
                    }
                }
                names.add(list.name(i));
            }
            throw new VerbsException("no RDMA device named " + name + "; this machine has " + names
                    + " (see 'jmesh devices')");
        }
    }

    public Verbs verbs() {
        return verbs;
    }

    public String name() {
        return name;
    }

    /** The {@code struct ibv_context*}. */
    public MemorySegment handle() {
        return context;
    }

    public DataPath dataPath() {
        return dataPath;
    }

    /** What a connection needs of a port, from the {@code ibv_query_port} macro. */
    public record PortAttributes(int activeIbvMtu, long maxMessageSize) {
    }

    public PortAttributes port(int port) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = ibv_port_attr.allocate(arena);
            int rc = verbs.queryPort(context, port, attr);
            if (rc != 0) {
                throw new VerbsException("ibv_query_port on " + name + " port " + port + " failed: "
                        + Errno.describe(rc), rc);
            }
            return new PortAttributes(ibv_port_attr.active_mtu(attr),
                    Integer.toUnsignedLong(ibv_port_attr.max_msg_sz(attr)));
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        int rc = verbs.closeDevice(context);
        if (rc != 0) {
            throw new VerbsException("ibv_close_device on " + name + " failed: " + Errno.describe(rc), rc);
        }
    }

    @Override
    public String toString() {
        return name;
    }
}

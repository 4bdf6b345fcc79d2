package io.jmesh.verbs;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * errno as libibverbs reports it: the capture-state layout that downcalls write it into, its symbolic name, the C
 * library's text for it, and for the errors users actually hit, what to do about them.
 */
public final class Errno {
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EFAULT = 14;
    public static final int EBUSY = 16;
    public static final int ENODEV = 19;
    public static final int EINVAL = 22;
    public static final int ENOSPC = 28;
    public static final int ENOSYS = 38;
    public static final int EPROTONOSUPPORT = 93;
    public static final int EOPNOTSUPP = 95;
    public static final int ETIMEDOUT = 110;

    /** Layout of the block {@link Linker.Option#captureCallState} fills in; allocate one per call site. */
    public static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO =
            CAPTURE_LAYOUT.varHandle(StructLayout.PathElement.groupElement("errno")).withInvokeExactBehavior();

    private static final MethodHandle STRERROR = Linker.nativeLinker().defaultLookup().find("strerror")
            .map(a -> Linker.nativeLinker().downcallHandle(a,
                    FunctionDescriptor.of(ValueLayout.ADDRESS.withTargetLayout(
                            java.lang.foreign.MemoryLayout.sequenceLayout(4096, ValueLayout.JAVA_BYTE)), ValueLayout.JAVA_INT)))
            .orElse(null);

    private Errno() {
    }

    /** Reads errno out of a capture-state block written by a downcall. */
    public static int read(MemorySegment captureState) {
        return (int) ERRNO.get(captureState, 0L);
    }

    /** "ENOSYS" for 38, and so on; "errno N" for values without a name here. */
    public static String name(int errno) {
        return switch (errno) {
            case EPERM -> "EPERM";
            case ENOENT -> "ENOENT";
            case EINTR -> "EINTR";
            case EIO -> "EIO";
            case EAGAIN -> "EAGAIN";
            case ENOMEM -> "ENOMEM";
            case EACCES -> "EACCES";
            case EFAULT -> "EFAULT";
            case EBUSY -> "EBUSY";
            case ENODEV -> "ENODEV";
            case EINVAL -> "EINVAL";
            case ENOSPC -> "ENOSPC";
            case ENOSYS -> "ENOSYS";
            case EOPNOTSUPP -> "EOPNOTSUPP";
            case ETIMEDOUT -> "ETIMEDOUT";
            default -> "errno " + errno;
        };
    }

    /** "ENOMEM (Cannot allocate memory)": the name and the C library's own text. */
    public static String describe(int errno) {
        String text = null;
        if (STRERROR != null) {
            try {
                MemorySegment s = (MemorySegment) STRERROR.invokeExact(errno);
                text = s.equals(MemorySegment.NULL) ? null : s.getString(0);
            } catch (Throwable ignored) {
                text = null;
            }
        }
        return text == null ? name(errno) : name(errno) + " (" + text + ")";
    }

    /** What a user can do about this errno from this call, or "" when there is nothing general to say. */
    public static String hint(String call, int errno) {
        boolean registers = call.startsWith("ibv_reg");
        if (errno == ENOMEM && registers) {
            return "the locked-memory limit is too low for this registration: raise it (ulimit -l unlimited, "
                    + "or memlock in /etc/security/limits.conf, or LimitMEMLOCK=infinity for a systemd service)";
        }
        if (errno == EPERM || errno == EACCES) {
            return "no permission to use /dev/infiniband/uverbs*: run as a user with access to it (the rdma group on "
                    + "some distributions) or as root";
        }
        if (errno == ENOSYS) {
            return "this kernel has no RDMA user-space support: load the RDMA driver for your NIC (mlx5_ib, or "
                    + "rdma_rxe for Soft-RoCE) and ib_uverbs, or use jmesh's TCP provider (JMESH_PROVIDER=tcp)";
        }
        if (errno == ENOMEM) {
            return "the device or the kernel is out of resources: close unused connections, or lower queue depths";
        }
        return "";
    }
}

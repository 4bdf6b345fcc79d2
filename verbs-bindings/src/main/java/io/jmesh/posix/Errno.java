package io.jmesh.posix;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * errno as a downcall reports it: the capture-state layout that downcalls write it into, its symbolic name and the C
 * library's text for it. Both libibverbs and the TCP relay's splice(2) report through it, so it belongs to neither
 * the verbs bindings nor the transport; what a user can do about a verbs call's errno is the bindings' own
 * ({@code io.jmesh.posix.ErrnoHints}).
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
}

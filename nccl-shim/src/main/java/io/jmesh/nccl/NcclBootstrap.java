package io.jmesh.nccl;

import io.jmesh.api.Context;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.charset.StandardCharsets;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Where the C library enters Java through JNI, once per start: {@link #bootstrap(long)} creates the {@link NcclPlugin},
 * routes logging to NCCL, and fills the library's upcall table with FFM upcall stubs bound to the plugin's methods;
 * from then on NCCL's calls reach Java through those stubs only. {@link #release()}, which the library calls after
 * NCCL finalized the last context, frees those stubs, so it is a stub of its own that lives as long as this class.
 */
public final class NcclBootstrap {
    private static final MemorySegment RELEASE = releaseStub();
    private static NcclPlugin plugin;
    private static Arena stubs;
    private static NcclLogAppender appender;

    private NcclBootstrap() {
    }

    /**
     * Fills the jm_boot_t at {@code bootAddress}.
     *
     * @return 0, or an ncclResult_t with the reason written into the block's error field
     */
    public static synchronized int bootstrap(long bootAddress) {
        MemorySegment boot = MemorySegment.ofAddress(bootAddress).reinterpret(ShimAbi.BOOT_ERROR_OFFSET
                + ShimAbi.ERROR_BYTES);
        try {
            int magic = boot.get(JAVA_INT, ShimAbi.BOOT_MAGIC_OFFSET);
            int abi = boot.get(JAVA_INT, ShimAbi.BOOT_ABI_OFFSET);
            int count = boot.get(JAVA_INT, ShimAbi.BOOT_UPCALL_COUNT_OFFSET);
            if (magic != ShimAbi.BOOT_MAGIC || abi != ShimAbi.ABI_VERSION || count != ShimAbi.UPCALL_COUNT) {
                return error(boot, "libnccl-net-jmesh.so (ABI " + abi + ", " + count + " upcalls) and the jmesh jars "
                        + "(ABI " + ShimAbi.ABI_VERSION + ", " + ShimAbi.UPCALL_COUNT + " upcalls) come from different "
                        + "builds; install the library and its lib/ folder from one build");
            }
            if (plugin != null) {
                return error(boot, "bootstrap called twice without release");
            }
            System.setProperty("log4j2.shutdownHookEnabled", "false");
            appender = NcclLogAppender.install(boot.get(JAVA_LONG, ShimAbi.BOOT_LOG_OFFSET));
            reportAotCache();
            boot.set(JAVA_LONG, ShimAbi.BOOT_RELEASE_OFFSET, RELEASE.address());
            NcclPlugin p = new NcclPlugin(new Context());
            Arena arena = Arena.ofShared();
            try {
                Linker linker = Linker.nativeLinker();
                MethodHandles.Lookup lookup = MethodHandles.lookup();
                for (ShimAbi.Upcall u : ShimAbi.Upcall.values()) {
                    MethodType type = u.descriptor.toMethodType();
                    MethodHandle target = u.collNet()
                            ? lookup.findVirtual(CollNetPlugin.class, methodName(u), type).bindTo(p.collNet)
                            : lookup.findVirtual(NcclPlugin.class, methodName(u), type).bindTo(p);
                    MemorySegment stub = linker.upcallStub(target, u.descriptor, arena);
                    boot.set(JAVA_LONG, ShimAbi.BOOT_UPCALLS_OFFSET + 8L * u.ordinal(), stub.address());
                }
            } catch (Throwable t) {
                arena.close();
                throw t;
            }
            plugin = p;
            stubs = arena;
            return 0;
        } catch (Throwable t) {
            if (appender != null) {
                appender.detach();
                appender = null;
            }
            return error(boot, "the jmesh Java bootstrap failed: " + t);
        }
    }

    /**
     * Closes what is still open, unhooks logging from the library, frees the upcall stubs. Called from C as an upcall,
     * so it throws nothing.
     */
    public static synchronized void release() {
        try {
            if (plugin != null) {
                plugin.release();
            }
        } catch (Throwable t) {
            System.err.println("jmesh NCCL plugin: release failed: " + t);
        }
        plugin = null;
        try {
            if (appender != null) {
                appender.detach();
            }
            if (stubs != null) {
                stubs.close();
            }
        } catch (Throwable t) {
            System.err.println("jmesh NCCL plugin: release failed: " + t);
        }
        appender = null;
        stubs = null;
    }

    /** The upcall for {@link #release()}, in an automatic arena: freed with this class, never while C may call it. */
    /**
     * Says whether the AOT cache the library asked for (property jmesh.nccl.aot) was used: a JVM that maps a cache
     * reports "sharing" in java.vm.info; one whose cache does not fit (a jar or the runtime changed after it was
     * built, or the layout was copied without its file times) runs without any, and says nothing since the library
     * silences it.
     */
    private static void reportAotCache() {
        String cache = System.getProperty("jmesh.nccl.aot");
        if (cache == null) {
            return;
        }
        Logger log = LogManager.getLogger(NcclBootstrap.class);  // not a static field: Log4j starts after the property
        if (System.getProperty("java.vm.info", "").contains("sharing")) {
            log.info(NcclLogAppender.INIT, "AOT cache {} in use", cache);
        } else {
            log.warn(NcclLogAppender.INIT, "the AOT cache {} does not fit this layout (a jar or the Java runtime "
                    + "changed after it was built, or the files were copied without their times), so the JVM started "
                    + "without it and slower; rebuild it: scripts/nccl-aot.sh {}", cache,
                    System.getProperty("jmesh.nccl.home"));
        }
    }

    private static MemorySegment releaseStub() {
        try {
            MethodHandle release = MethodHandles.lookup().findStatic(NcclBootstrap.class, "release",
                    MethodType.methodType(void.class));
            return Linker.nativeLinker().upcallStub(release, FunctionDescriptor.ofVoid(), Arena.ofAuto());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String methodName(ShimAbi.Upcall u) {
        return switch (u) {
            case INIT -> "init";
            case DEVICES -> "devices";
            case GET_PROPERTIES -> "getProperties";
            case LISTEN -> "listen";
            case CONNECT -> "connect";
            case ACCEPT -> "accept";
            case REG_MR -> "regMr";
            case DEREG_MR -> "deregMr";
            case ISEND -> "isend";
            case IRECV -> "irecv";
            case IFLUSH -> "iflush";
            case TEST -> "test";
            case CLOSE_SEND -> "closeSend";
            case CLOSE_RECV -> "closeRecv";
            case CLOSE_LISTEN -> "closeListen";
            case FINALIZE -> "finalizeContext";
            case COLL_GET_PROPERTIES -> "getProperties";
            case COLL_CONNECT -> "connect";
            case REDUCE_SUPPORT -> "reduceSupport";
            case COLL_REG_MR -> "regMr";
            case COLL_DEREG_MR -> "deregMr";
            case IALLREDUCE -> "iallreduce";
            case COLL_TEST -> "test";
            case CLOSE_COLL -> "closeColl";
        };
    }

    private static int error(MemorySegment boot, String message) {
        byte[] b = message.getBytes(StandardCharsets.UTF_8);
        int n = Math.min(b.length, ShimAbi.ERROR_BYTES - 1);
        MemorySegment.copy(b, 0, boot, java.lang.foreign.ValueLayout.JAVA_BYTE, ShimAbi.BOOT_ERROR_OFFSET, n);
        boot.set(java.lang.foreign.ValueLayout.JAVA_BYTE, ShimAbi.BOOT_ERROR_OFFSET + n, (byte) 0);
        return Nccl.SYSTEM_ERROR;
    }
}

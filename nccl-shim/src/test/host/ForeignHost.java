import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A JVM that is not jmesh's: run with the source launcher and an empty class path (NcclForeignJvmTest), it loads
 * libnccl-net-jmesh.so through FFM as NCCL would and calls ncclNetPlugin_v12's init, devices and finalize. The plugin
 * must join this JVM (JNI_GetCreatedJavaVMs) and, since its classes are not on this class path, load them from the
 * layout's lib/ with a class loader of its own.
 *   java --enable-native-access=ALL-UNNAMED ForeignHost.java /path/to/libnccl-net-jmesh.so
 */
public class ForeignHost {
    public static void main(String[] args) throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            Linker linker = Linker.nativeLinker();
            MemorySegment net = SymbolLookup.libraryLookup(java.nio.file.Path.of(args[0]), arena)
                    .find("ncclNetPlugin_v12").orElseThrow().reinterpret(176);
            MethodHandle init = linker.downcallHandle(net.get(ADDRESS, 8), FunctionDescriptor.of(JAVA_INT, ADDRESS,
                    JAVA_LONG, ADDRESS, ADDRESS, ADDRESS));
            MethodHandle devices = linker.downcallHandle(net.get(ADDRESS, 16), FunctionDescriptor.of(JAVA_INT,
                    ADDRESS));
            MethodHandle fin = linker.downcallHandle(net.get(ADDRESS, 160), FunctionDescriptor.of(JAVA_INT, ADDRESS));
            MemorySegment ctx = arena.allocate(ADDRESS);
            MemorySegment config = arena.allocate(JAVA_INT);
            config.set(JAVA_INT, 0, -1);
            int rc = (int) init.invokeExact(ctx, 7L, config, MemorySegment.NULL, MemorySegment.NULL);
            if (rc != 0) {
                System.out.println("foreign host: init returned " + rc);
                System.exit(1);
            }
            MemorySegment n = arena.allocate(JAVA_INT);
            rc = (int) devices.invokeExact(n);
            System.out.println("foreign host: devices rc=" + rc + " n=" + n.get(JAVA_INT, 0));
            boolean ours = false;
            try {
                Class.forName("io.jmesh.nccl.NcclBootstrap");
                ours = true;
            } catch (ClassNotFoundException e) {
                // expected: the plugin's classes live in its own loader, not on this class path
            }
            System.out.println("foreign host: plugin classes on the host's class path: " + ours);
            rc = (int) fin.invokeExact(ctx.get(ADDRESS, 0));
            System.out.println("foreign host: finalize rc=" + rc);
            System.exit(rc == 0 && n.get(JAVA_INT, 0) > 0 && !ours ? 0 : 1);
        }
    }
}

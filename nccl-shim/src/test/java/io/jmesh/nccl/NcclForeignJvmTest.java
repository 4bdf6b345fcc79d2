package io.jmesh.nccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plugin loaded into a process that already runs a JVM of its own, whose class path lacks jmesh (src/test/host/
 * ForeignHost.java under the source launcher): the library must join that JVM instead of creating one, and load its
 * classes from the layout's lib/ through a class loader of its own.
 */
class NcclForeignJvmTest {
    @Test
    void joinsAJvmThatIsNotOurs(@TempDir Path dir) throws Exception {
        Path host = Path.of(System.getProperty("jmesh.nccl.test.host.dir", "src/test/host"), "ForeignHost.java");
        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", host.toString(), DriverRun.LIBRARY.toAbsolutePath().toString())
                .directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().remove("CLASSPATH");
        pb.environment().remove("JAVA_TOOL_OPTIONS");
        pb.environment().put("JMESH_PROVIDER", "tcp");
        pb.environment().put("JMESH_ADDRESSES", "127.0.0.1/8");
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), out);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("foreign host: devices rc=0 n=1"), out);
        assertTrue(out.contains("plugin classes on the host's class path: false"), out);
        assertTrue(out.contains("foreign host: finalize rc=0"), out);
    }
}

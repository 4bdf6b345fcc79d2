package io.jmesh.api;

import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The layering docs/architecture.md draws holds in the class files: the API refers to no class of the transport (it
 * finds the providers through {@link io.jmesh.api.spi.ProviderFactory}), and the module exports the API, its provider
 * interface and discovery, and none of the transport's own packages.
 */
class ApiLayeringTest {
    private static final List<String> PROVIDER_PACKAGES = List.of("io/jmesh/transport/rdma/",
            "io/jmesh/transport/tcp/", "io/jmesh/transport/handshake/", "io/jmesh/transport/verbs/",
            "io/jmesh/transport/log/", "io/jmesh/verbs/", "io/jmesh/transport/net/", "io/jmesh/transport/route/",
            "io/jmesh/transport/core/", "io/jmesh/transport/liveness/");

    private static Path classes() throws Exception {
        Path root = Path.of(Fabric.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        assumeTrue(Files.isDirectory(root), "reads the compiled classes of target/classes, not a jar: " + root);
        return root;
    }

    @Test
    void theApiRefersToNoProviderClass() throws Exception {
        Path api = classes().resolve("io/jmesh/api");
        List<Path> files;
        try (Stream<Path> walk = Files.walk(api)) {
            files = walk.filter(p -> p.toString().endsWith(".class")).toList();
        }
        assertTrue(files.size() > 10, "found only " + files);
        for (Path f : files) {
            // class names in the constant pool are plain UTF-8 ("io/jmesh/transport/rdma/RdmaProvider")
            String pool = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
            for (String p : PROVIDER_PACKAGES) {
                assertFalse(pool.contains(p), api.relativize(f) + " refers to a class of " + p);
            }
        }
    }

    @Test
    void theModuleExportsTheApiAndNoProviderPackage() throws Exception {
        ModuleDescriptor module;
        try (InputStream in = Files.newInputStream(classes().resolve("module-info.class"))) {
            module = ModuleDescriptor.read(in);
        }
        Set<String> exports = module.exports().stream().map(ModuleDescriptor.Exports::source)
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(Set.of("io.jmesh.api", "io.jmesh.api.spi", "io.jmesh.transport.discovery")),
                exports);
        Set<String> provided = module.provides().stream().flatMap(p -> p.providers().stream())
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(Set.of("io.jmesh.transport.rdma.RdmaProviderFactory",
                "io.jmesh.transport.tcp.TcpProviderFactory")), provided);
        // the class path, where jmesh runs, lists the same providers
        try (InputStream in = Fabric.class.getResourceAsStream("/META-INF/services/"
                + io.jmesh.api.spi.ProviderFactory.class.getName())) {
            assertTrue(in != null, "META-INF/services file missing");
            Set<String> listed = new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().map(String::trim)
                    .filter(l -> !l.isEmpty() && !l.startsWith("#")).collect(Collectors.toCollection(TreeSet::new));
            assertEquals(provided, listed);
        }
    }
}

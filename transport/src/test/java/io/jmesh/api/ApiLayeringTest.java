package io.jmesh.api;

import io.jmesh.verbs.Verbs;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The layering docs/architecture.md draws holds in the class files: the API refers to no class of any package under
 * {@code io.jmesh.transport} nor of the verbs bindings (it finds the providers through
 * {@link io.jmesh.api.spi.ProviderFactory}), and the module exports the API, its provider interface and discovery, and
 * none of the transport's own packages.
 */
class ApiLayeringTest {
    private static Path classes() throws Exception {
        Path root = Path.of(Fabric.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        assumeTrue(Files.isDirectory(root), "reads the compiled classes of target/classes, not a jar: " + root);
        return root;
    }

    /**
     * Every package of the transport and of the verbs bindings, found in their class files rather than listed here,
     * so that a package added later is covered without anyone remembering this test.
     */
    private static Set<String> internalPackages() throws Exception {
        Path root = classes();
        Set<String> packages = new TreeSet<>();
        try (Stream<Path> walk = Files.walk(root.resolve("io/jmesh/transport"))) {
            walk.filter(p -> p.toString().endsWith(".class"))
                    .forEach(p -> packages.add(root.relativize(p.getParent()).toString().replace('\\', '/') + "/"));
        }
        packages.addAll(packagesOf(Path.of(Verbs.class.getProtectionDomain().getCodeSource().getLocation().toURI())));
        // a scan that found little would pass while checking nothing
        assertTrue(packages.containsAll(Set.of("io/jmesh/transport/rdma/", "io/jmesh/transport/tcp/",
                "io/jmesh/transport/discovery/", "io/jmesh/verbs/")), "the scan found only " + packages);
        return packages;
    }

    /** The packages of the verbs bindings' classes, from target/classes or from their jar. */
    private static Set<String> packagesOf(Path location) throws IOException {
        Set<String> packages = new TreeSet<>();
        if (Files.isDirectory(location)) {
            try (Stream<Path> walk = Files.walk(location)) {
                walk.filter(p -> p.toString().endsWith(".class") && !p.endsWith("module-info.class")).forEach(
                        p -> packages.add(location.relativize(p.getParent()).toString().replace('\\', '/') + "/"));
            }
        } else {
            try (JarFile jar = new JarFile(location.toFile())) {
                jar.stream().map(JarEntry::getName)
                        .filter(n -> n.endsWith(".class") && n.contains("/") && !n.startsWith("META-INF/"))
                        .forEach(n -> packages.add(n.substring(0, n.lastIndexOf('/') + 1)));
            }
        }
        return packages;
    }

    @Test
    void theApiRefersToNoProviderClass() throws Exception {
        Path api = classes().resolve("io/jmesh/api");
        List<Path> files;
        try (Stream<Path> walk = Files.walk(api)) {
            files = walk.filter(p -> p.toString().endsWith(".class")).toList();
        }
        assertTrue(files.size() > 10, "found only " + files);
        Set<String> internal = internalPackages();
        for (Path f : files) {
            // class names in the constant pool are plain UTF-8 ("io/jmesh/transport/rdma/RdmaProvider")
            String pool = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
            for (String p : internal) {
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

package io.jmesh.api;

import io.jmesh.api.spi.ProviderFactory;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import java.util.StringJoiner;

/** The provider factories on the class path (or module path), found once through {@link ServiceLoader}. */
final class Providers {
    /** What {@code JMESH_PROVIDER=auto} means: try the providers in their {@link ProviderFactory#autoOrder()}. */
    static final String AUTO = "auto";

    private static volatile List<ProviderFactory> factories;

    private Providers() {
    }

    /**
     * Every factory, found through this class's loader: the NCCL plugin loads jmesh in a class loader of its own,
     * whose thread context loader cannot see jmesh's service files.
     */
    static List<ProviderFactory> all() {
        List<ProviderFactory> found = factories;
        if (found == null) {
            List<ProviderFactory> list = new ArrayList<>();
            for (ProviderFactory f : ServiceLoader.load(ProviderFactory.class, Providers.class.getClassLoader())) {
                if (list.stream().noneMatch(g -> g.name().equals(f.name()))) {
                    list.add(f);
                }
            }
            factories = found = List.copyOf(list);
        }
        return found;
    }

    /** The factory called {@code name} or one of its aliases (any case), or null. */
    static ProviderFactory find(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        for (ProviderFactory f : all()) {
            if (f.name().equals(n) || f.aliases().contains(n)) {
                return f;
            }
        }
        return null;
    }

    /** The factories {@code auto} tries, in order. */
    static List<ProviderFactory> autoCandidates() {
        return all().stream().filter(f -> f.autoOrder() >= 0)
                .sorted(Comparator.comparingInt(ProviderFactory::autoOrder)).toList();
    }

    /** The accepted names for a message: "auto, rdma (also verbs, ib, roce) or tcp (also socket)". */
    static String choices() {
        List<String> names = new ArrayList<>();
        names.add(AUTO);
        for (ProviderFactory f : all()) {
            names.add(f.name() + (f.aliases().isEmpty() ? "" : " (also " + String.join(", ", f.aliases()) + ")"));
        }
        StringJoiner j = new StringJoiner(", ");
        for (int i = 0; i < names.size() - 1; i++) {
            j.add(names.get(i));
        }
        return names.size() == 1 ? AUTO : j + " or " + names.getLast();
    }

    /** The error when no factory is found at all: the class path lacks jmesh's service file. */
    static String noneFound() {
        return "no jmesh provider found: META-INF/services/" + ProviderFactory.class.getName() + " is not on the "
                + "class path (put the whole jmesh-transport jar, or its target/classes with its resources, on the "
                + "class path)";
    }
}

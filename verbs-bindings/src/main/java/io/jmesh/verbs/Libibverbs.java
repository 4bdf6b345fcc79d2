package io.jmesh.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;

/**
 * Whether libibverbs.so.1 can be loaded, checked once and without touching the generated classes: those load the
 * library in a static initializer and would turn a missing library into an {@code ExceptionInInitializerError}.
 */
public final class Libibverbs {
    /** The versioned name: the unversioned libibverbs.so exists only where the -dev package is installed. */
    public static final String SONAME = "libibverbs.so.1";

    private static final String PROBLEM = probe();

    private Libibverbs() {
    }

    private static String probe() {
        try {
            SymbolLookup.libraryLookup(SONAME, Arena.global());
            return null;
        } catch (IllegalArgumentException | IllegalCallerException e) {
            return SONAME + " cannot be loaded (" + e.getMessage() + "): install rdma-core's user-space verbs library "
                    + "(Debian/Ubuntu: apt-get install libibverbs1 ibverbs-providers; RHEL/Fedora: dnf install "
                    + "libibverbs), or use jmesh's TCP provider (JMESH_PROVIDER=tcp)";
        }
    }

    /** @throws VerbsUnavailableException naming the cause and the fix when the library does not load */
    public static void requireLoadable() {
        if (PROBLEM != null) {
            throw new VerbsUnavailableException(PROBLEM, 0);
        }
    }
}

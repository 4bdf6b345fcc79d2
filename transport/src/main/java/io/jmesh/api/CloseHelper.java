package io.jmesh.api;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Closes several resources, each even when an earlier one failed, so that one failed close leaks nothing else. Null
 * entries are skipped. Pass them in the order they must close: connections before the listeners, registrations and
 * fabric they use (for a list kept in opening order, {@code closeAll(open.reversed())}).
 *
 * <pre>{@code
 * List<AutoCloseable> open = new ArrayList<>();
 * try {
 *     open.add(fabric.register(memory));
 *     ...
 * } finally {
 *     CloseHelper.closeAll(open.reversed());   // throws the first failure, the others suppressed in it
 * }
 * }</pre>
 */
public final class CloseHelper {
    private CloseHelper() {
    }

    /** Closes each in order; then throws the first failure, if any, with the later ones added as suppressed. */
    public static void closeAll(AutoCloseable... closeables) {
        closeAll(closeables == null ? null : Arrays.asList(closeables));
    }

    /**
     * Closes each in iteration order; then throws the first failure, if any, with the later ones added as suppressed:
     * a {@link RuntimeException} or {@link Error} as it is, an {@link IOException} in an {@link UncheckedIOException},
     * any other checked exception in an {@link IllegalStateException}.
     */
    public static void closeAll(Iterable<? extends AutoCloseable> closeables) {
        Throwable first = closeAll(closeables, null);
        if (first instanceof RuntimeException r) {
            throw r;
        }
        if (first instanceof Error e) {
            throw e;
        }
        if (first instanceof IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
        if (first != null) {
            throw new IllegalStateException(first.getMessage(), first);
        }
    }

    /**
     * Closes each in iteration order and hands every failure to {@code onError} (to log it, say) instead of
     * throwing; for paths where a failed close must not hide what happened before.
     */
    public static void closeAll(Consumer<? super Throwable> onError, Iterable<? extends AutoCloseable> closeables) {
        closeAll(closeables, onError);
    }

    /** Closes each in order, handing every failure to {@code onError}. */
    public static void closeAll(Consumer<? super Throwable> onError, AutoCloseable... closeables) {
        closeAll(onError, closeables == null ? null : Arrays.asList(closeables));
    }

    /**
     * Closes each in iteration order and returns the first failure, with the later ones added as suppressed, or null:
     * for a caller that already has an exception of its own and adds this one to it.
     */
    public static Throwable closeAllCatching(Iterable<? extends AutoCloseable> closeables) {
        return closeAll(closeables, null);
    }

    private static Throwable closeAll(Iterable<? extends AutoCloseable> closeables,
                                      Consumer<? super Throwable> onError) {
        if (closeables == null) {
            return null;
        }
        Throwable first = null;
        for (AutoCloseable c : closeables) {
            if (c == null) {
                continue;
            }
            try {
                c.close();
            } catch (Throwable t) {
                if (onError != null) {
                    onError.accept(t);
                } else if (first == null) {
                    first = t;
                } else if (first != t) {
                    first.addSuppressed(t);
                }
            }
        }
        return first;
    }
}

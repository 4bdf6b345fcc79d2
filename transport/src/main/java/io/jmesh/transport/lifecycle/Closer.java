package io.jmesh.transport.lifecycle;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Closes several of the transport's resources, each even when an earlier one failed, so that one failed close leaks
 * nothing else; null entries are skipped. The transport's own copy of what {@code io.jmesh.api.CloseHelper} offers
 * applications: the API may refer to no class of the transport, so the public helper cannot be this one, and the
 * transport does not lean on a helper whose contract is written for applications.
 */
public final class Closer {
    private Closer() {
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
        Throwable first = close(closeables, null);
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

    /** Closes each in iteration order and hands every failure to {@code onError} instead of throwing. */
    public static void closeAll(Consumer<? super Throwable> onError, Iterable<? extends AutoCloseable> closeables) {
        close(closeables, onError);
    }

    /** Closes each in order, handing every failure to {@code onError}. */
    public static void closeAll(Consumer<? super Throwable> onError, AutoCloseable... closeables) {
        closeAll(onError, closeables == null ? null : Arrays.asList(closeables));
    }

    private static Throwable close(Iterable<? extends AutoCloseable> closeables, Consumer<? super Throwable> onError) {
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

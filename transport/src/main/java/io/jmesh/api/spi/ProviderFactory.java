package io.jmesh.api.spi;

import io.jmesh.api.Context;
import io.jmesh.api.ProviderUnavailableException;

import java.util.List;

/**
 * Opens one transport. {@link io.jmesh.api.Fabric} finds the factories with {@link java.util.ServiceLoader}: a
 * factory is listed in {@code META-INF/services/io.jmesh.api.spi.ProviderFactory} (jmesh runs on the class path) and
 * by {@code provides} in its module's {@code module-info}. {@code JMESH_PROVIDER} names one by {@link #name()} or an
 * {@link #aliases() alias}; {@code auto} tries, in {@link #autoOrder()}, those that take part, and takes the first
 * that can run here.
 *
 * <pre>{@code
 * public final class LoopProviderFactory implements ProviderFactory {
 *     public String name() { return "loop"; }
 *     public int autoOrder() { return -1; }                  // only when asked for by name
 *     public Provider open(Context context) { return new LoopProvider(context.addresses()); }
 * }
 * }</pre>
 */
public interface ProviderFactory {
    /** The name {@code JMESH_PROVIDER} selects this provider by, and {@link Provider#name()}: "rdma", "tcp". */
    String name();

    /** Other names that select it (lower case), e.g. "verbs" for "rdma". */
    default List<String> aliases() {
        return List.of();
    }

    /** Where {@code auto} tries this provider: lower first; negative: never (only when named). */
    int autoOrder();

    /**
     * Opens the provider with a concluded context; the provider takes what it needs from it at once (later changes to
     * the context do not reach it) and owns everything it creates until {@link Provider#close()}.
     *
     * @throws ProviderUnavailableException when it cannot run on this machine at all, saying why and what to do;
     *                                      {@code auto} then tries the next provider
     */
    Provider open(Context context);
}

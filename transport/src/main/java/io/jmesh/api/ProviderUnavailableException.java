package io.jmesh.api;

/**
 * A provider cannot run on this machine at all (for verbs: no libibverbs, no RDMA device, no port with a usable
 * address). The message says why and what to do. {@link Fabric#open} throws it when the provider asked for by name is
 * unavailable, or when {@code auto} found none available.
 *
 * <pre>{@code
 * try (Fabric fabric = Fabric.open(new Context().provider("rdma"))) {
 *     // ...
 * } catch (ProviderUnavailableException e) {
 *     System.err.println("no RDMA here: " + e.getMessage());
 * }
 * }</pre>
 */
public final class ProviderUnavailableException extends RuntimeException {
    private final String provider;

    /**
     * @param provider the provider's name ("rdma")
     * @param message  why it cannot run and what to do
     * @param cause    the underlying failure, or null
     */
    public ProviderUnavailableException(String provider, String message, Throwable cause) {
        super(message, cause);
        this.provider = provider;
    }

    /** The name of the provider that cannot run. */
    public String provider() {
        return provider;
    }
}

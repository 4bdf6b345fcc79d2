package io.jmesh.api;

/**
 * Why a {@link Progress} future failed: the {@link Status} code the data path returned and the reason (the
 * connection's {@code error()}, the peer's refusal of a one-sided operation, or the agent's close).
 *
 * <pre>{@code
 * progress.send(sender, reg, 0, 4096, 7).exceptionally(e -> {
 *     TransferException t = (TransferException) (e instanceof CompletionException ? e.getCause() : e);
 *     log.warn("send failed ({}): {}", Status.describe(t.status()), t.getMessage());
 *     return -1L;
 * });
 * }</pre>
 */
public final class TransferException extends RuntimeException {
    private final int status;

    public TransferException(int status, String message) {
        super(message);
        this.status = status;
    }

    /** The {@link Status} code: FAILED, CLOSED, REFUSED, BAD_ARGUMENT or TRUNCATED. */
    public int status() {
        return status;
    }
}

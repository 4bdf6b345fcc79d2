package io.jmesh.verbs;

/**
 * Verbs cannot be used on this machine at all: libibverbs.so.1 is missing, or the kernel has no RDMA support. The
 * message says which and how to fix it; callers that have a fallback (the TCP provider) catch this one.
 */
public final class VerbsUnavailableException extends VerbsException {
    public VerbsUnavailableException(String message, int errno) {
        super(message, errno);
    }
}

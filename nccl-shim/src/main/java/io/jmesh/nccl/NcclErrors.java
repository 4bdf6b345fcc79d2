package io.jmesh.nccl;

import io.jmesh.api.Status;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * How the upcall bodies ({@link NcclPlugin}, {@link CollNetPlugin}) turn a failure into an {@code ncclResult_t} and a
 * WARN line through NCCL's logger: nothing may escape an upcall, so every one ends in these.
 */
final class NcclErrors {
    /** The plugin's logger: these lines read as the plugin's own in NCCL's log. */
    private static final Logger LOG = LogManager.getLogger(NcclPlugin.class);

    private NcclErrors() {
    }

    /** A transport status on a comm: logged once per connection (NCCL retries), mapped to NCCL's result. */
    static int failed(String op, Comm c, int status) {
        int result = status == Status.BAD_ARGUMENT || status == Status.TRUNCATED ? Nccl.INVALID_USAGE
                : Nccl.REMOTE_ERROR;
        if (!c.failureLogged) {
            c.failureLogged = true;
            LOG.warn("jmesh {} on comm {} failed: {} -> {}", op, c.handle, describe(status, c.error()),
                    Nccl.describe(result));
        }
        return result;
    }

    /**
     * A failed operation's status and the connection's own words. A connection its peer closed in order while NCCL
     * still waits on it means the peer rank ended its communicator mid-collective, nearly always because it failed
     * first (an abort after its own error): the transport's advice to connect again does not apply under NCCL, where
     * to look does.
     */
    static String describe(int status, String why) {
        if (status != Status.CLOSED) {
            return Status.describe(status) + (why == null ? "" : " (" + why + ")");
        }
        String what = why == null ? "the peer closed the connection" : why.replace("; connect again to go on", "");
        return "closed (" + what + "): that rank ended its communicator (ncclCommAbort or ncclCommDestroy) while this "
                + "rank still waited for its data, usually after a failure of its own, which that rank's log names";
    }

    static int badHandle(String op, long comm, long mhandle) {
        LOG.warn("jmesh {}: unknown comm {} or memory handle {}", op, comm, mhandle);
        return Nccl.INVALID_ARGUMENT;
    }

    static int badRange(String op, long data, long size, MemHandle m) {
        LOG.warn("jmesh {}: buffer 0x{} +{} is not inside its {}", op, Long.toHexString(data), size, m);
        return Nccl.INVALID_ARGUMENT;
    }

    /** An argument NCCL should never pass: {@code why} names it and what to do. */
    static int invalid(String op, String why) {
        LOG.warn("jmesh {}: {}", op, why);
        return Nccl.INVALID_ARGUMENT;
    }

    static int fail(String op, Throwable t, int result) {
        try {
            LOG.warn("jmesh {} failed: {} -> {}", op, t.getMessage() != null ? t.getMessage() : t.toString(),
                    Nccl.describe(result));
            LOG.debug("jmesh {} failure", op, t);
        } catch (Throwable ignored) {
            // logging itself failed; the result code still reports the error
        }
        return result;
    }

    static void closeFailed(Throwable t) {
        LOG.warn("jmesh: closing failed: {}", t.toString());
    }
}

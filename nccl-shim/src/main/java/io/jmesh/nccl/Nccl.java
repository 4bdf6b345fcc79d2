package io.jmesh.nccl;

/** NCCL's constants that the adapter uses (ncclResult_t, pointer types, log levels and subsystems). */
final class Nccl {
    static final int SUCCESS = 0;
    static final int SYSTEM_ERROR = 2;
    static final int INTERNAL_ERROR = 3;
    static final int INVALID_ARGUMENT = 4;
    static final int INVALID_USAGE = 5;
    static final int REMOTE_ERROR = 6;

    static final int PTR_HOST = 0x1;
    static final int PTR_CUDA = 0x2;
    static final int PTR_DMABUF = 0x4;

    static final int HANDLE_MAXSIZE = 128;
    /** The most NCCL's test() can report in its int sizes; also NCCL's own MAX_NET_SIZE. */
    static final long MAX_MESSAGE_BYTES = 1L << 30;
    static final int MAX_RECVS = 8;

    static final int LOG_WARN = 2;
    static final int LOG_INFO = 3;
    static final int LOG_TRACE = 5;
    static final long SUBSYS_INIT = 0x1;
    static final long SUBSYS_NET = 0x10;
    static final long SUBSYS_ALL = ~0L;

    private Nccl() {
    }

    static String describe(int result) {
        return switch (result) {
            case SUCCESS -> "ncclSuccess";
            case SYSTEM_ERROR -> "ncclSystemError";
            case INTERNAL_ERROR -> "ncclInternalError";
            case INVALID_ARGUMENT -> "ncclInvalidArgument";
            case INVALID_USAGE -> "ncclInvalidUsage";
            case REMOTE_ERROR -> "ncclRemoteError";
            default -> "ncclResult " + result;
        };
    }
}

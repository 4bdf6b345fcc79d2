package io.jmesh.verbs;

import io.jmesh.posix.Errno;

/** For the errnos users actually hit in verbs calls, what to do about them. */
final class ErrnoHints {
    private ErrnoHints() {
    }

    /** What a user can do about this errno from this call, or "" when there is nothing general to say. */
    static String hint(String call, int errno) {
        boolean registers = call.startsWith("ibv_reg");
        if (errno == Errno.ENOMEM && registers) {
            return "the locked-memory limit is too low for this registration: raise it (ulimit -l unlimited, "
                    + "or memlock in /etc/security/limits.conf, or LimitMEMLOCK=infinity for a systemd service)";
        }
        if (errno == Errno.EPERM || errno == Errno.EACCES) {
            return "no permission to use /dev/infiniband/uverbs*: run as a user with access to it (the rdma group on "
                    + "some distributions) or as root";
        }
        if (errno == Errno.ENOSYS) {
            return "this kernel has no RDMA user-space support: load the RDMA driver for your NIC (mlx5_ib, or "
                    + "rdma_rxe for Soft-RoCE) and ib_uverbs, or use jmesh's TCP provider (JMESH_PROVIDER=tcp)";
        }
        if (errno == Errno.ENOMEM) {
            return "the device or the kernel is out of resources: close unused connections, or lower queue depths";
        }
        return "";
    }
}

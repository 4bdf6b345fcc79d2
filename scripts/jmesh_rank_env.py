"""Per-rank settings for a torchrun job whose ranks stand for the nodes of a mesh on one machine.

torchrun gives every rank the same environment, but on a mesh each rank sits on its own links and must count as its
own node. The scripts that place ranks (scripts/relay-lib.sh) pass the whole placement instead, and each rank takes
its part here, before NCCL starts (the plugin's JVM and NCCL read them at the communicator's first init):

    JMESH_BENCH_ADDRESSES  the ranks' JMESH_ADDRESSES, ';' between local ranks -> JMESH_ADDRESSES of this rank
    JMESH_BENCH_HOSTID     a prefix -> NCCL_HOSTID=<prefix>-<local rank>: NCCL then sees one GPU per node and builds
                           inter-node rings and trees (and allows PAT), as on a real mesh
"""
import os


def apply(local_rank):
    """Sets this rank's JMESH_ADDRESSES and NCCL_HOSTID from the placement, if any; returns what it set."""
    chosen = {}
    placement = os.environ.get("JMESH_BENCH_ADDRESSES")
    if placement:
        parts = placement.split(";")
        if local_rank >= len(parts):
            raise SystemExit(f"JMESH_BENCH_ADDRESSES places {len(parts)} ranks, not local rank {local_rank}")
        chosen["JMESH_ADDRESSES"] = parts[local_rank]
    prefix = os.environ.get("JMESH_BENCH_HOSTID")
    if prefix:
        chosen["NCCL_HOSTID"] = f"{prefix}-{local_rank}"
    os.environ.update(chosen)
    return chosen

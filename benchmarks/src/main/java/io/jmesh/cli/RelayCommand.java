package io.jmesh.cli;

import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.LocalLink;

import java.io.PrintStream;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * 'jmesh relay': a fabric that only relays and answers route discovery, for a node of the mesh that runs no jmesh
 * program of its own (in an NCCL job every node runs ranks, and each of their fabrics relays already). It runs the
 * provider the other nodes run (verbs where this node has RDMA links, as the others pick, else TCP; {@code --provider}
 * to choose), until it is stopped (Ctrl-C) or for {@code --seconds}.
 */
public final class RelayCommand {
    private static final Set<String> VALUES = Set.of("addresses", "seconds", "provider");
    private static final Set<String> FLAGS = Set.of("help");

    private RelayCommand() {
    }

    public static int run(List<String> argv, PrintStream out, PrintStream err) throws InterruptedException {
        Args a = Args.parse(argv, Args.shorts("h", "help"), VALUES, FLAGS);
        if (a.flag("help")) {
            out.println("usage: jmesh relay [--addresses LIST] [--provider auto|rdma|tcp] [--seconds S]");
            out.println();
            out.println("Relays for the other nodes of the mesh: peers that share no link reach each other through");
            out.println("this node. Every jmesh fabric relays already; run this on a node that runs none. Settings as");
            out.println("for every fabric (JMESH_ADDRESSES, JMESH_ROUTE_PORT, JMESH_ROUTES, JMESH_RELAY_CHUNK_KIB,");
            out.println("JMESH_RELAY_CHUNKS, docs/configuration.md).");
            out.println("  --addresses  the mesh addresses with prefixes (default: JMESH_ADDRESSES, else all)");
            out.println("  --provider   auto (default: verbs where RDMA links exist, else TCP), rdma or tcp: the same as");
            out.println("               the other nodes run (JMESH_PROVIDER)");
            out.println("  --seconds    stop after this long (default: run until stopped)");
            return 0;
        }
        Context context = new Context();
        if (a.has("provider")) {
            context.provider(a.string("provider", "auto"));
        }
        if (a.has("addresses")) {
            context.addresses(a.string("addresses", ""));
        }
        long seconds = a.integer("seconds", 0, 0, 365L * 24 * 3600);
        try (Fabric fabric = Fabric.open(context)) {
            out.println("jmesh relay: relaying (" + fabric.provider() + ") on " + fabric.links().stream().map(LocalLink::prefix).toList()
                    + " (route discovery on UDP port " + context.routePort() + ")" + (seconds > 0 ? " for "
                    + seconds + " s" : "; Ctrl-C to stop"));
            out.flush();
            if (seconds > 0) {
                TimeUnit.SECONDS.sleep(seconds);
            } else {
                Thread.currentThread().join();
            }
        }
        return 0;
    }
}

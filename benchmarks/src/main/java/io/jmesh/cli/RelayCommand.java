package io.jmesh.cli;

import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.LocalLink;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * 'jmesh relay': a fabric that only relays and answers route discovery, for a node of the mesh that runs no jmesh
 * program of its own (in an NCCL job every node runs ranks, and each of their fabrics relays already). It runs the
 * provider the other nodes run (verbs where this node has RDMA links, as the others pick, else TCP; {@code --provider}
 * to choose), until it is stopped (Ctrl-C) or for {@code --seconds}.
 */
@Command(name = "relay", mixinStandardHelpOptions = true)
public final class RelayCommand implements Callable<Integer>, Cli.HelpText {
    @Option(names = "--addresses")
    String addresses;
    @Option(names = "--provider")
    String provider = "auto";
    @Option(names = "--seconds")
    long seconds;

    private final PrintStream out;

    RelayCommand(PrintStream out) {
        this.out = out;
    }

    /** 'jmesh relay' with {@code argv}, as {@link Jmesh#run(String, List, PrintStream, PrintStream)} runs it. */
    public static int run(List<String> argv, PrintStream out, PrintStream err) {
        return Jmesh.run("relay", argv, out, err);
    }

    @Override
    public String helpText() {
        return """
                usage: jmesh relay [--addresses LIST] [--provider auto|rdma|tcp] [--seconds S]

                Relays for the other nodes of the mesh: peers that share no link reach each other through
                this node. Every jmesh fabric relays already; run this on a node that runs none. Settings as
                for every fabric (JMESH_ADDRESSES, JMESH_ROUTE_PORT, JMESH_ROUTES, JMESH_RELAY_CHUNK_KIB,
                JMESH_RELAY_CHUNKS, docs/configuration.md).
                  --addresses  the mesh addresses with prefixes (default: JMESH_ADDRESSES, else all)
                  --provider   auto (default: verbs where RDMA links exist, else TCP), rdma or tcp: the same as
                               the other nodes run (JMESH_PROVIDER)
                  --seconds    stop after this long (default: run until stopped)
                """;
    }

    @Override
    public Integer call() {
        if (seconds < 0 || seconds > 365L * 24 * 3600) {
            throw new Cli.UsageError("--seconds " + seconds + ": expected 0 (run until stopped) to a year");
        }
        Context context = Settings.withOptions(provider, addresses, -1);
        try (Fabric fabric = Fabric.open(context)) {
            out.println("jmesh relay: relaying (" + fabric.provider() + ") on " + fabric.links().stream().map(LocalLink::prefix).toList()
                    + " (route discovery on UDP port " + context.routePort() + ")" + (seconds > 0 ? " for "
                    + seconds + " s" : "; Ctrl-C to stop"));
            out.flush();
            try {
                if (seconds > 0) {
                    TimeUnit.SECONDS.sleep(seconds);
                } else {
                    Thread.currentThread().join();
                }
            } catch (InterruptedException e) {
                // stopped by whoever embeds it, as Ctrl-C stops the process: a normal end
                Thread.currentThread().interrupt();
            }
        }
        return 0;
    }
}

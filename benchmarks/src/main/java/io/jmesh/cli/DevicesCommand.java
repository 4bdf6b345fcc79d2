package io.jmesh.cli;

import io.jmesh.api.Context;
import io.jmesh.transport.discovery.Discovery;
import io.jmesh.transport.discovery.DiscoveryResult;
import io.jmesh.transport.discovery.PortAddress;
import io.jmesh.transport.discovery.RdmaDevice;
import io.jmesh.transport.discovery.RdmaPort;

import picocli.CommandLine.Command;

import java.io.PrintStream;
import java.util.concurrent.Callable;

/**
 * {@code jmesh devices}: what ibv_devices, ibdev2netdev and show_gids tell, in one table: every RDMA device and port
 * with its netdev, each address with its prefix and the RoCE v2 GID index that carries it, port state, MTU, link
 * layer and rate; or why there are none.
 */
@Command(name = "devices", mixinStandardHelpOptions = true)
final class DevicesCommand implements Callable<Integer>, Cli.HelpText {
    private final PrintStream out;

    DevicesCommand(PrintStream out) {
        this.out = out;
    }

    @Override
    public String helpText() {
        return """
                usage: jmesh devices

                Every RDMA device and port in one table: netdev, addresses with prefixes, state, MTU, link layer,
                rate and the RoCE v2 GID index of each address, or why there are none (exit status 0 either way).
                JMESH_GID_INDEX forces a GID index as for every fabric.
                """;
    }

    @Override
    public Integer call() {
        return run(out, Settings.environment());
    }

    static int run(PrintStream out, Context context) {
        DiscoveryResult found = Discovery.scan(context.conclude().gidIndex());
        if (found.unavailable() != null) {
            out.println("No RDMA devices on this machine.");
            out.println(found.unavailable());
            return 0;
        }
        TextTable table = new TextTable("DEVICE", "PORT", "STATE", "LINK", "MTU", "RATE", "NETDEV", "NETDEV-MTU",
                "ADDRESS", "GID", "GID-TYPE");
        for (RdmaDevice d : found.devices()) {
            for (RdmaPort p : d.ports()) {
                String state = p.state().replace("PORT_", "").toUpperCase(java.util.Locale.ROOT);
                String rate = p.rate().isEmpty() ? "-" : p.rate();
                String netdev = p.netdev().isEmpty() ? "-" : p.netdev();
                String netdevMtu = p.netdevMtu() > 0 ? Integer.toString(p.netdevMtu()) : "-";
                if (p.addresses().isEmpty()) {
                    table.add(d.name(), p.number(), state, p.linkLayer(), p.activeMtu(), rate, netdev, netdevMtu,
                            "(no address)", "-", "-");
                }
                for (PortAddress a : p.addresses()) {
                    String type = a.usable() ? p.gids().stream().filter(g -> g.index() == a.gidIndex())
                            .map(g -> g.type().label()).findFirst().orElse("?") : "-";
                    table.add(d.name(), p.number(), state, p.linkLayer(), p.activeMtu(), rate, netdev, netdevMtu,
                            a.prefix(), a.usable() ? Integer.toString(a.gidIndex()) : "none", type);
                }
            }
        }
        table.print(out);
        boolean header = false;
        for (RdmaDevice d : found.devices()) {
            for (RdmaPort p : d.ports()) {
                for (PortAddress a : p.addresses()) {
                    if (!a.usable()) {
                        if (!header) {
                            out.println();
                            out.println("Addresses without a RoCE v2 GID (not usable by jmesh over RDMA):");
                            header = true;
                        }
                        out.println("  " + a.problem());
                    }
                }
            }
        }
        if (!found.problems().isEmpty()) {
            out.println();
            out.println("Problems:");
            found.problems().forEach(p -> out.println("  " + p));
        }
        return 0;
    }
}

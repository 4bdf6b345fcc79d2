package io.jmesh.cli;

import io.jmesh.api.Context;
import io.jmesh.cli.perf.PerfCommand;
import io.jmesh.api.JmeshLog;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

/** The {@code jmesh} command. */
public final class Jmesh {
    private Jmesh() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        try {
            // before the first logger: Log4j Core would read a bad level from log4j2.xml, print a stack trace and
            // go on at its default level
            JmeshLog.level();
        } catch (IllegalArgumentException e) {
            err.println("jmesh: " + e.getMessage());
            return 2;
        }
        try {
            return dispatch(args, out, err);
        } catch (Exception e) {
            err.println("jmesh: " + e);
            return 1;
        }
    }

    private static int dispatch(String[] args, PrintStream out, PrintStream err) throws Exception {
        String command = args.length == 0 ? "help" : args[0];
        List<String> rest = Arrays.asList(args).subList(Math.min(1, args.length), args.length);
        try {
            return switch (command) {
                case "devices" -> DevicesCommand.run(out, new Context());
                case "bw", "lat" -> PerfCommand.run(command, rest, out, err);
                case "doctor" -> io.jmesh.cli.doctor.DoctorCommand.run(rest, out, err);
                case "demo" -> io.jmesh.cli.demo.DemoCommand.run(rest, out, err);
                case "relay" -> RelayCommand.run(rest, out, err);
                case "jmh" -> {
                    // the JMH runner with jmesh's benchmarks on the class path (see docs/benchmarks.md)
                    org.openjdk.jmh.Main.main(rest.toArray(String[]::new));
                    yield 0;
                }
                case "help", "-h", "--help" -> {
                    usage(out);
                    yield 0;
                }
                default -> {
                    err.println("jmesh: unknown command '" + command + "'");
                    usage(err);
                    yield 2;
                }
            };
        } catch (IllegalArgumentException e) {
            err.println("jmesh " + command + ": " + e.getMessage());
            return 2;
        }
    }

    private static void usage(PrintStream out) {
        out.println("usage: jmesh COMMAND [options]      (jmesh COMMAND --help for a command's options)");
        out.println();
        out.println("commands:");
        out.println("  demo      a three-node triangle mesh on this machine: handles, the link each connection");
        out.println("            chose and why, bandwidth with verified data (--softroce: over real verbs)");
        out.println("  devices   every RDMA device and port: netdev, addresses with prefixes, state, MTU, link layer,");
        out.println("            rate and the RoCE v2 GID index of each address (or why there are none)");
        out.println("  doctor    checks this node (devices, ports, GIDs, MTU, memlock, subnets) and each given peer");
        out.println("            over RDMA with a real handshake (peers run 'jmesh doctor --serve'), draws the mesh");
        out.println("  bw        bandwidth between two nodes, in ib_write_bw's columns (server: jmesh bw; client:");
        out.println("            jmesh bw SERVER)");
        out.println("  lat       latency between two nodes, in ib_write_lat's columns (jmesh lat / jmesh lat SERVER)");
        out.println("  relay     relays for the other nodes (peers without a link of their own reach each other through");
        out.println("            this node); for a node that runs no jmesh program, as every fabric relays already");
        out.println("  jmh       the JMH benchmarks (JMH's own options: jmesh jmh -h; list: jmesh jmh -l)");
        out.println("  help      this text");
    }
}

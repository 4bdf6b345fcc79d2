package io.jmesh.cli;

import io.jmesh.api.JmeshLog;
import io.jmesh.cli.demo.DemoCommand;
import io.jmesh.cli.doctor.DoctorCommand;
import io.jmesh.cli.perf.PerfCli;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** The {@code jmesh} command: one parser (picocli) for every subcommand, and one exit-code rule ({@link Cli}). */
@Command(name = "jmesh", mixinStandardHelpOptions = true)
public final class Jmesh implements Callable<Integer>, Cli.HelpText {
    @Parameters(hidden = true)
    private List<String> unknown = new ArrayList<>();

    private final PrintStream err;

    private Jmesh(PrintStream err) {
        this.err = err;
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the command line {@code args}; returns the exit status (0 ok, 1 the run failed, 2 a usage error). */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        try {
            // before the first logger: Log4j Core would read a bad level from log4j2.xml, print a stack trace and
            // go on at its default level
            JmeshLog.level();
        } catch (IllegalArgumentException e) {
            err.println("jmesh: " + e.getMessage());
            return 2;
        }
        Settings.warnMisspelt(System.getenv(), err);
        CommandLine cl = new CommandLine(new Jmesh(err));
        cl.addSubcommand(new DemoCommand(out, err));
        cl.addSubcommand(new DevicesCommand(out));
        cl.addSubcommand(new DoctorCommand(out, err));
        cl.addSubcommand(new PerfCli.Bw(out, err));
        cl.addSubcommand(new PerfCli.Lat(out, err));
        cl.addSubcommand(new RelayCommand(out));
        cl.addSubcommand(new Jmh());
        cl.addSubcommand("help", new CommandLine.HelpCommand());
        CommandLine jmh = cl.getSubcommands().get("jmh");
        jmh.setUnmatchedOptionsArePositionalParams(true);
        return Cli.execute(cl, args, out, err);
    }

    /** {@link #run(String[], PrintStream, PrintStream)} for one subcommand and its arguments. */
    public static int run(String command, List<String> args, PrintStream out, PrintStream err) {
        List<String> all = new ArrayList<>(List.of(command));
        all.addAll(args);
        return run(all.toArray(String[]::new), out, err);
    }

    @Override
    public Integer call() {
        if (!unknown.isEmpty()) {
            err.println("jmesh: unknown command '" + unknown.getFirst() + "'");
        }
        err.print(helpText());
        return Cli.USAGE;
    }

    @Override
    public String helpText() {
        return """
                usage: jmesh COMMAND [options]      (jmesh COMMAND --help for a command's options)

                commands:
                  demo      a three-node triangle mesh on this machine: handles, the link each connection
                            chose and why, bandwidth with verified data (--softroce: over real verbs)
                  devices   every RDMA device and port: netdev, addresses with prefixes, state, MTU, link layer,
                            rate and the RoCE v2 GID index of each address (or why there are none)
                  doctor    checks this node (devices, ports, GIDs, MTU, memlock, subnets) and each given peer
                            with a real handshake (peers run 'jmesh doctor --serve'), draws the mesh
                  bw        bandwidth between two nodes, in ib_write_bw's columns (server: jmesh bw; client:
                            jmesh bw SERVER)
                  lat       latency between two nodes, in ib_write_lat's columns (jmesh lat / jmesh lat SERVER)
                  relay     relays for the other nodes (peers without a link of their own reach each other through
                            this node); for a node that runs no jmesh program, as every fabric relays already
                  jmh       the JMH benchmarks (JMH's own options: jmesh jmh -h; list: jmesh jmh -l)
                  help      this text (help COMMAND: that command's options)

                Every command reads the JMESH_* settings of docs/configuration.md; a misspelt one is warned about.
                """;
    }

    /** 'jmesh jmh': JMH's runner with jmesh's benchmarks on the class path; JMH parses everything but --help. */
    @Command(name = "jmh")
    static final class Jmh implements Callable<Integer>, Cli.HelpText {
        @Option(names = "--help", usageHelp = true)
        boolean help;
        @Option(names = {"-V", "--version"}, versionHelp = true)
        boolean version;
        @Parameters
        List<String> jmhArgs = new ArrayList<>();

        @Override
        public Integer call() throws Exception {
            org.openjdk.jmh.Main.main(jmhArgs.toArray(String[]::new));
            return Cli.OK;
        }

        @Override
        public String helpText() {
            return """
                    usage: jmesh jmh [JMH options] [BENCHMARK-REGEX]

                    The JMH benchmarks of jmesh (docs/benchmarks.md). Every option but --help and --version is
                    JMH's own: 'jmesh jmh -h' lists them, 'jmesh jmh -l' lists the benchmarks.
                    """;
        }

        @Override
        public String footer() {
            return Cli.FOOTER.replace("-h, --help    ", "    --help    ");
        }
    }
}

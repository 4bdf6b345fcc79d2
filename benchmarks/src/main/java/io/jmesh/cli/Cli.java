package io.jmesh.cli;

import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.UnmatchedArgumentException;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Properties;

/**
 * What every jmesh subcommand shares: the exit-code rule (0 ok, 1 the run failed, 2 a usage error), the version, the
 * one-line form of every error, and the hand-written help texts (kept, because docs and scripts quote them) rendered
 * through picocli, which parses the options.
 */
public final class Cli {
    public static final int OK = 0;
    public static final int FAILED = 1;
    public static final int USAGE = 2;

    private Cli() {
    }

    /** A command's own help text, shown for --help in place of picocli's generated one. */
    public interface HelpText {
        String helpText();

        /** The lines on --help and --version and the exit status, after the command's own. */
        default String footer() {
            return FOOTER;
        }
    }

    /** A bad argument or setting found after parsing: the command prints it in one line and exits 2. */
    public static final class UsageError extends IllegalArgumentException {
        public UsageError(String message) {
            super(message);
        }
    }

    /** The project's version, filtered into version.properties at build time. */
    public static String version() {
        try (InputStream in = Cli.class.getResourceAsStream("version.properties")) {
            Properties p = new Properties();
            if (in != null) {
                p.load(in);
            }
            String v = p.getProperty("version", "");
            // an unfiltered copy (a build that skipped resources) still says something true
            return v.isEmpty() || v.startsWith("$") ? "unknown (built without Maven's resources)" : v;
        } catch (IOException e) {
            return "unknown (" + e.getMessage() + ")";
        }
    }

    /** Runs the command line {@code cl} (jmesh and its subcommands) on {@code args}; returns the exit status. */
    static int execute(CommandLine cl, String[] args, PrintStream out, PrintStream err) {
        cl.setOut(new PrintWriter(out, true, StandardCharsets.UTF_8));
        cl.setErr(new PrintWriter(err, true, StandardCharsets.UTF_8));
        // perftest's and the scripts' habit: a repeated option takes its last value; '@' is no file here
        cl.setOverwrittenOptionsAllowed(true);
        cl.setExpandAtFiles(false);
        cl.setParameterExceptionHandler((ex, a) -> {
            err.println(name(ex.getCommandLine()) + ": " + oneLine(ex) + " (see '" + name(ex.getCommandLine())
                    + " --help')");
            return USAGE;
        });
        cl.setExecutionExceptionHandler((ex, c, parsed) -> {
            err.println(name(c) + ": " + inCommandTerms(c, ex.getMessage() == null ? ex.toString() : ex.getMessage()));
            err.flush();
            return ex instanceof UsageError ? USAGE : FAILED;
        });
        configure(cl);
        int rc = cl.execute(args);
        out.flush();
        err.flush();
        return rc;
    }

    private static void configure(CommandLine cl) {
        CommandSpec spec = cl.getCommandSpec();
        spec.versionProvider(() -> new String[] {"jmesh " + version()});
        if (cl.getCommand() instanceof HelpText h) {
            cl.setHelpSectionKeys(List.of("text"));
            cl.getHelpSectionMap().put("text", help -> h.helpText() + h.footer());
        }
        cl.getSubcommands().values().forEach(Cli::configure);
    }

    static final String FOOTER = """
              -h, --help            this text
              -V, --version         jmesh's version
            Exit status: 0 ok, 1 the run failed, 2 a usage error (a bad option, argument or JMESH_* setting).
            """;

    /**
     * The transport names the settings it was given by their variables; where the user gave one as an option of this
     * command, the message names the option instead.
     */
    static String inCommandTerms(CommandLine c, String message) {
        CommandLine.ParseResult r = c.getParseResult();
        if (r != null && r.hasMatchedOption("--addresses")) {
            message = message.replace("JMESH_ADDRESSES lists", "--addresses lists");
        }
        if (c.getCommandSpec().findOption("--provider") != null) {
            message = message.replace("(JMESH_PROVIDER=tcp)", "(--provider tcp)");
        }
        return message;
    }

    static String name(CommandLine cl) {
        return cl.getCommandSpec().qualifiedName();
    }

    private static String oneLine(ParameterException ex) {
        String m = ex.getMessage().replace("\n", " ").replaceFirst("^Error: ", "")
                .replaceAll("' is not (a double|a long|an int)", "' is not a number");
        if (ex instanceof UnmatchedArgumentException u && !u.getSuggestions().isEmpty()) {
            m += "; did you mean " + String.join(" or ", u.getSuggestions()) + "?";
        }
        return m;
    }
}

package io.jmesh.cli.perf;

import io.jmesh.api.Connections;
import io.jmesh.api.Connector;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Listener;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.cli.FabricSupport;
import io.jmesh.cli.perf.PerfCommandTest.Result;
import io.jmesh.api.ListenHandle;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static io.jmesh.cli.perf.PerfCommandTest.args;
import static io.jmesh.cli.perf.PerfCommandTest.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A 'jmesh bw' or 'jmesh lat' server whose client vanishes in the middle of the run gives up, says why, frees its
 * port and returns 1 (it serves one client). The client here is the protocol by hand, in this JVM, so that it can
 * vanish the ways its jmesh connections do not report: it freezes with everything open (a hung process whose
 * liveness thread still answers, or a machine gone where nothing tells), or only its out-of-band connection closes
 * (a killed process on verbs, whose queue pairs fail the server's receives only after the NIC's retries).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class PerfServerClientGoneTest {
    /** Far beyond the few seconds a server with --timeout 3 needs: only a hang takes this long. */
    private static final long HANG_S = 60;

    @Test
    void aBandwidthServerWhoseClientFreezesGivesUpAfterItsTimeout() throws Exception {
        Result srv = serveAndVanish("bw", "127.0.94", "3", false);
        assertTrue(srv.err().contains("nothing from the client for 3 s in the middle of the run (received [3] "
                + "messages") && srv.err().contains("start both ends again"), srv.err());
    }

    @Test
    void aLatencyServerWhoseClientFreezesGivesUpAfterItsTimeout() throws Exception {
        Result srv = serveAndVanish("lat", "127.0.95", "3", false);
        assertTrue(srv.err().contains("nothing from the client for 3 s in the middle of the run (echoed 3")
                && srv.err().contains("start both ends again"), srv.err());
    }

    /** The end of the out-of-band stream is noticed long before the timeout, and named. */
    @Test
    void aBandwidthServerWhoseClientLeavesSaysSoBeforeItsTimeout() throws Exception {
        Result srv = serveAndVanish("bw", "127.0.96", "30", true);
        assertTrue(srv.err().contains("the client went away in the middle of the run") && srv.err().contains(
                "closed the out-of-band connection") && srv.err().contains("start both ends again"), srv.err());
    }

    /**
     * Starts a server with {@code --timeout timeout}, has a client say hello, connect and exchange three messages,
     * then vanish: closing only its out-of-band connection when {@code leave}, else going silent with everything
     * open. Returns the server's result once it gave up, after checking it failed and freed its port.
     */
    private static Result serveAndVanish(String test, String net, String timeout, boolean leave) throws Exception {
        int port = freePort();
        List<String> serverArgs = List.of("--provider", "tcp", "--addresses", net + ".1/24", "-p",
                Integer.toString(port), "--timeout", timeout);
        CompletableFuture<Result> server = CompletableFuture.supplyAsync(() -> PerfCommandTest.run(test,
                serverArgs));
        Result srv;
        try (Client client = new Client(test, port, net)) {
            client.exchange(3);
            if (leave) {
                client.oob.close();
            }
            try {
                srv = server.get(HANG_S, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                // closing the client (finally) ends the hung server's connections, so it does not outlive the test
                throw new AssertionError("the 'jmesh " + test + "' server (--timeout " + timeout + ") still runs "
                        + HANG_S + " s after its client " + (leave ? "left" : "froze") + " in the middle of the run",
                        e);
            }
        }
        assertEquals(1, srv.rc(), srv.out() + srv.err());
        try (ServerSocket again = new ServerSocket()) {
            // a listener left open refuses this bind; the closed connections' TIME_WAIT does not (SO_REUSEADDR)
            again.bind(new InetSocketAddress(net + ".1", port));
        } catch (java.io.IOException e) {
            fail("the server left its out-of-band port " + port + " open: " + e);
        }
        return srv;
    }

    /** What PerfClient does up to "ready", by hand, and then a few messages; nothing of it closes until close(). */
    private static final class Client implements AutoCloseable {
        private final List<AutoCloseable> open = new ArrayList<>();
        private final PerfOptions o;
        private final Registration reg;
        private final Oob oob;
        private final Sender sender;
        private final Receiver back;

        Client(String test, int port, String net) throws Exception {
            boolean lat = test.equals("lat");
            o = PerfOptions.parse(test, args(port, net + ".2/24", net + ".1"), System.out);
            try {
                Fabric fabric = FabricSupport.open(o.context());
                open.add(fabric);
                Arena arena = Arena.ofShared();
                open.add(arena);
                reg = fabric.register(arena.allocate(2 * 4096, 4096));
                open.add(reg);
                Listener listener = fabric.listen();
                open.add(listener);
                oob = Oob.connect(net + ".1", port, Duration.ofSeconds(HANG_S), Duration.ofSeconds(HANG_S));
                open.add(oob);
                oob.send("hello version=" + PerfProtocol.VERSION + " test=" + test + " qps=1 maxsize=4096"
                        + (lat ? " op=send handle=" + listener.handleText() : ""));
                ListenHandle peer = ListenHandle.parse(PerfProtocol.requireField(oob.expect("handle"), "handle"));
                Connector c = fabric.connect(peer.encode());
                open.add(c);
                sender = Connections.await(c, o.timeout(), IdleStrategy.controlPlane());
                open.add(sender);
                back = lat ? Connections.accept(listener, o.timeout(), IdleStrategy.controlPlane()) : null;
                if (back != null) {
                    open.add(back);
                }
                oob.expect("ready");
            } catch (Exception | Error e) {
                close();
                throw e;
            }
        }

        /** Sends {@code n} messages, each awaited (and for lat its echo too): the run is under way. */
        void exchange(int n) throws Exception {
            Requests requests = new Requests(o);
            Registration[] regs = {reg};
            long[] max = {4096};
            for (int i = 0; i < n; i++) {
                int echo = back == null ? -1 : requests.postOrFail(back, regs, new long[] {4096}, max,
                        Requests.ZERO_TAG);
                requests.completeSend(sender, requests.sendOrFail(sender, reg, 64));
                long deadline = System.nanoTime() + o.timeout().toNanos();
                while (echo >= 0 && back.test(echo) != 1) {
                    assertTrue(System.nanoTime() - deadline < 0, "no echo from the server: " + back.error());
                }
            }
        }

        @Override
        public void close() {
            PerfCommand.closeAll(open);
        }
    }
}

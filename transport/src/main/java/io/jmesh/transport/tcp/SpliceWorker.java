package io.jmesh.transport.tcp;

import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import io.jmesh.transport.agent.SelectorAgent;
import io.jmesh.transport.agent.SelectorAgentRunner;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * One of a TCP relay's splicing threads ({@value TcpRelay#THREAD_NAME}-N): it connects onwards the splices the relay
 * routed to it and moves their bytes both ways on its own selector. One thread for every relayed socket of a node
 * was far slower than the direct connections it carried (docs/benchmarks-gpu-relay.md), so the relay spreads its splices
 * over several such threads, as the TCP provider spreads its bulk sockets over its helpers. Only its own thread
 * touches its splices after {@link #adopt}.
 */
final class SpliceWorker implements AutoCloseable {
    private static final Logger LOG = JmeshLog.logger(SpliceWorker.class);
    private static final long MAX_IDLE_MILLIS = 100;

    private record Adopted(Splice splice, InetSocketAddress next) {
    }

    private final TcpRelay relay;
    private final Selector selector;
    private final SelectorAgentRunner runner;
    private final Queue<Adopted> adopted = new ConcurrentLinkedQueue<>();
    private final List<Splice> splices = new ArrayList<>();

    SpliceWorker(TcpRelay relay, int index) throws IOException {
        this.relay = relay;
        this.selector = Selector.open();
        this.runner = new SelectorAgentRunner(TcpRelay.THREAD_NAME + "-" + index, selector, new Loop());
    }

    void start() {
        runner.start();
    }

    /** Takes over {@code s} (routed, its onward socket open but not connected) and connects it to {@code next}. */
    void adopt(Splice s, InetSocketAddress next) {
        adopted.add(new Adopted(s, next));
        selector.wakeup();
    }

    /** The worker's duty cycle: pump the ready splices, connect the adopted ones, expire late connects. */
    private final class Loop implements SelectorAgent {
        @Override
        public String roleName() {
            return "jmesh relay worker";
        }

        @Override
        public long firstWaitMillis() {
            return MAX_IDLE_MILLIS;
        }

        @Override
        public void onSelected(SelectionKey key) {
            SpliceWorker.this.onSelected(key);
        }

        @Override
        public long doWork() {
            Adopted a;
            while ((a = adopted.poll()) != null) {
                connect(a.splice(), a.next());
            }
            expire(System.nanoTime());
            return MAX_IDLE_MILLIS;
        }

        @Override
        public void onClose() {
            closeAll();
        }
    }

    private void connect(Splice s, InetSocketAddress next) {
        splices.add(s);
        try {
            s.inKey = s.in.register(selector, 0, s);
            boolean done = s.out.connect(next);
            s.outKey = s.out.register(selector, SelectionKey.OP_CONNECT, s);
            if (done) {
                s.state = Splice.State.SPLICING;
                pumpOrClose(s);
            }
        } catch (IOException e) {
            end(s, "cannot connect onwards to " + DataSockets.describe(next) + ": " + e.getMessage());
        }
    }

    private void onSelected(SelectionKey key) {
        Splice s = (Splice) key.attachment();
        try {
            if (s.state == Splice.State.CONNECTING) {
                if (s.out.finishConnect()) {
                    s.state = Splice.State.SPLICING;
                    LOG.debug("jmesh relay: relaying {}", s);
                    pumpOrClose(s);
                }
            } else if (s.state == Splice.State.SPLICING) {
                pumpOrClose(s);
            }
        } catch (CancelledKeyException ignored) {
            // closed while its event was pending
        } catch (IOException e) {
            end(s, s.state == Splice.State.CONNECTING ? "cannot connect onwards to "
                    + DataSockets.describe(s.target) + ": " + e.getMessage() : e.getMessage());
        }
    }

    private void pumpOrClose(Splice s) throws IOException {
        if (!s.pump(relay)) {
            LOG.debug("jmesh relay: {} done", s);
            forget(s);
        }
    }

    private void end(Splice s, String why) {
        if (s.state == Splice.State.SPLICING && (why != null && (why.contains("Connection reset")
                || why.contains("Broken pipe")))) {
            // an end closing its connection resets the socket under the other direction's last bytes: not news
            LOG.debug("jmesh relay: relayed connection {} ended: one end closed it ({})", s, why);
        } else {
            LOG.info("jmesh relay: relayed connection {} ended: {}", s, why);
        }
        forget(s);
    }

    private void forget(Splice s) {
        s.close();
        if (splices.remove(s)) {
            relay.spliceEnded();
        }
    }

    private void expire(long now) {
        for (int i = splices.size() - 1; i >= 0; i--) {
            Splice s = splices.get(i);
            if (s.state == Splice.State.CONNECTING && now - s.deadlineNanos >= 0) {
                end(s, "the next hop " + DataSockets.describe(s.target) + " did not accept within the handshake "
                        + "timeout");
            }
        }
    }

    /** Stops the thread; its splices close, so both ends of each of its relayed sockets learn it at once. */
    @Override
    public void close() {
        runner.close();
    }

    private void closeAll() {
        for (Adopted a; (a = adopted.poll()) != null; ) {
            a.splice().close();
        }
        for (Splice s : splices) {
            s.close();
        }
        splices.clear();
        DataSockets.closeQuietly(selector);
    }
}

package io.jmesh.transport.agent;

import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.nio.channels.Selector;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The one duty cycle of jmesh's selector threads: select with the agent's wait, the agent's work, repeat until
 * {@link #close}; an unexpected error is logged and the loop goes on, since one bad datagram or socket must not stop
 * a fabric's liveness or handshakes; when the loop ends, however it ends, the agent's {@link SelectorAgent#onClose}
 * runs exactly once. {@link #close} waits up to {@value #JOIN_MILLIS} ms for the thread: call it at shutdown.
 */
public final class SelectorAgentRunner implements AutoCloseable {
    private static final Logger LOG = JmeshLog.logger(SelectorAgentRunner.class);
    static final long JOIN_MILLIS = 5_000;

    private final Selector selector;
    private final SelectorAgent agent;
    private final Thread thread;
    private final AtomicBoolean agentClosed = new AtomicBoolean();
    private volatile boolean running = true;

    public SelectorAgentRunner(String threadName, Selector selector, SelectorAgent agent) {
        this.selector = Objects.requireNonNull(selector, "selector");
        this.agent = Objects.requireNonNull(agent, "agent");
        this.thread = Thread.ofPlatform().daemon().name(threadName).unstarted(this::run);
    }

    public void start() {
        thread.start();
    }

    /** False once {@link #close} was called or the loop ended: callers fail new work at once instead of queueing it. */
    public boolean isRunning() {
        return running;
    }

    /** Whether the caller is the runner's own thread. */
    public boolean onRunnerThread() {
        return Thread.currentThread() == thread;
    }

    /** Wakes the select, so that work queued by another thread is done now. */
    public void wakeup() {
        selector.wakeup();
    }

    private void run() {
        try {
            long wait = agent.firstWaitMillis();
            while (running) {
                try {
                    selector.select(agent::onSelected, Math.max(1, wait));
                    wait = agent.doWork();
                } catch (Exception | LinkageError | AssertionError e) {
                    if (running) {
                        LOG.error("{}: unexpected error; the thread keeps running", agent.roleName(), e);
                    }
                }
            }
        } finally {
            running = false; // also when the loop died of an Error: later calls fail at once instead of hanging
            closeAgent();
        }
    }

    /** Stops the loop and waits for it; the agent's onClose has run when this returns (unless the wait timed out). */
    @Override
    public void close() {
        running = false;
        selector.wakeup();
        if (thread.getState() == Thread.State.NEW) {
            closeAgent();
            return;
        }
        if (!onRunnerThread()) {
            try {
                thread.join(JOIN_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void closeAgent() {
        if (agentClosed.compareAndSet(false, true)) {
            agent.onClose();
        }
    }
}

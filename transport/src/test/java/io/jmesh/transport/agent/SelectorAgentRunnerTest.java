package io.jmesh.transport.agent;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** The one duty cycle of the selector threads: work after every select, errors survived, onClose exactly once. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SelectorAgentRunnerTest {
    /** Counts its calls; throws from doWork what {@code failure} says, once per setting. */
    private static final class Counting implements SelectorAgent {
        final AtomicInteger work = new AtomicInteger();
        final AtomicInteger closes = new AtomicInteger();
        volatile Throwable failure;
        volatile Thread closedOn;

        @Override
        public String roleName() {
            return "test agent";
        }

        @Override
        public long firstWaitMillis() {
            return 1;
        }

        @Override
        public void onSelected(SelectionKey key) {
        }

        @Override
        public long doWork() throws IOException {
            work.incrementAndGet();
            Throwable t = failure;
            failure = null;
            if (t instanceof IOException e) {
                throw e;
            } else if (t instanceof RuntimeException e) {
                throw e;
            } else if (t instanceof Error e) {
                throw e;
            }
            return 1;
        }

        @Override
        public void onClose() {
            closes.incrementAndGet();
            closedOn = Thread.currentThread();
        }
    }

    private final List<Selector> selectors = new ArrayList<>();

    @AfterEach
    void closeSelectors() throws IOException {
        for (Selector s : selectors) {
            s.close();
        }
    }

    /** A runner over a selector of its own, which the test closes afterwards. */
    private SelectorAgentRunner runner(Counting agent) throws IOException {
        Selector selector = Selector.open();
        selectors.add(selector);
        return new SelectorAgentRunner("jmesh-test-agent", selector, agent);
    }

    private static void await(String what, BooleanSupplier done) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                fail("not within 10 s: " + what);
            }
            Thread.sleep(1);
        }
    }

    @Test
    void itWorksAfterEverySelectSurvivesExceptionsAndClosesTheAgentOnceOnItsThread() throws Exception {
        Counting agent = new Counting();
        SelectorAgentRunner runner = runner(agent);
        runner.start();
        await("work", () -> agent.work.get() > 3);
        agent.failure = new IOException("a bad datagram");
        await("the IOException thrown", () -> agent.failure == null);
        int after = agent.work.get();
        await("work after an IOException", () -> agent.work.get() > after + 3);
        agent.failure = new IllegalStateException("a handler's bug");
        await("the RuntimeException thrown", () -> agent.failure == null);
        int later = agent.work.get();
        await("work after a RuntimeException", () -> agent.work.get() > later + 3);
        assertTrue(runner.isRunning());
        runner.close();
        assertFalse(runner.isRunning());
        assertEquals(1, agent.closes.get(), "onClose once");
        assertEquals("jmesh-test-agent", agent.closedOn.getName(), "on the runner's thread");
        runner.close();
        assertEquals(1, agent.closes.get(), "a second close closes nothing again");
    }

    @Test
    void anErrorThatEndsTheLoopStillClosesTheAgentAndStopsTheRunner() throws Exception {
        Counting agent = new Counting();
        SelectorAgentRunner runner = runner(agent);
        runner.start();
        await("work", () -> agent.work.get() > 0);
        agent.failure = new StackOverflowError("not survivable");
        await("the loop ended", () -> !runner.isRunning());
        await("onClose", () -> agent.closes.get() == 1);
        runner.close();
        assertEquals(1, agent.closes.get());
    }

    @Test
    void aRunnerNeverStartedClosesItsAgentOnTheClosersThread() throws Exception {
        Counting agent = new Counting();
        SelectorAgentRunner runner = runner(agent);
        runner.close();
        assertEquals(1, agent.closes.get());
        assertEquals(Thread.currentThread(), agent.closedOn);
        assertEquals(0, agent.work.get(), "no work without a thread");
    }
}

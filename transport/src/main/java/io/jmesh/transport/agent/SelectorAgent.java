package io.jmesh.transport.agent;

import java.io.IOException;
import java.nio.channels.SelectionKey;

/**
 * The work of one selector thread (the handshake agent, liveness, route discovery, the TCP relay), which a
 * {@link SelectorAgentRunner} runs: what to do with a ready key, what to do after every select (commands from other
 * threads, deadlines, periodic rounds), and what to release when the thread stops. The runner owns the loop, the
 * thread, the errors and the shutdown, so each agent says only what is its own (Agrona's Agent is the model).
 */
public interface SelectorAgent {
    /** Names the thread's job in its log lines: "jmesh liveness". */
    String roleName();

    /** How long the first select may wait, in milliseconds (at least 1). */
    long firstWaitMillis();

    /** A key the selector found ready. */
    void onSelected(SelectionKey key);

    /** After every select: the agent's own work; returns how long the next select may wait, in milliseconds. */
    long doWork() throws IOException;

    /** Once, when the runner stops: on the runner's thread, or on the closer's where the thread never ran. */
    void onClose();
}

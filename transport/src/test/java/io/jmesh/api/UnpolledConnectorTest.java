package io.jmesh.api;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A connect whose Connector nobody polls cannot finish (poll() builds the sender and sends READY). Both sides then say
 * so, with the fix, instead of "the peer could not reach any address"; a connect that was polled and failed for
 * another reason says nothing of polling.
 */
class UnpolledConnectorTest {
    private static final String NOT_POLLED = "Connector was not polled for";
    private static final String FIX = "call poll() until it returns a Sender, or use Connections.connect or "
            + "Connections.await";

    private static Fabric open(String address) {
        return Fabric.open(Context.from(Map.of(), Map.of()).provider("tcp").addresses(address).routePort(0)
                .handshakeTimeoutMs(1_000));
    }

    @Test
    @Timeout(30)
    void bothSidesSayTheConnectorWasNotPolled() throws Exception {
        try (Fabric a = open("127.0.96.2/24"); Fabric b = open("127.0.96.3/24"); Listener listener = b.listen()) {
            Connector c = a.connect(listener.handle()); // and never polled until the listener gave up
            ConnectTimeoutException e = assertThrows(ConnectTimeoutException.class,
                    () -> Connections.accept(listener, Duration.ofSeconds(4), IdleStrategy.controlPlane()));
            assertTrue(e.getMessage().startsWith("no connection completed within 4 s: a connection from "),
                    e.getMessage());
            assertTrue(e.getMessage().contains(NOT_POLLED) && e.getMessage().contains(FIX), e.getMessage());
            assertFalse(e.getMessage().contains("could not reach"), e.getMessage());
            IllegalStateException late = assertThrows(IllegalStateException.class, c::poll);
            assertTrue(late.getMessage().contains("waiting for this process: the connecting side's " + NOT_POLLED)
                    && late.getMessage().contains(FIX), late.getMessage());
        }
    }

    @Test
    @Timeout(30)
    void aPolledConnectThatTimesOutSaysNothingOfPolling() throws Exception {
        try (Fabric a = open("127.0.97.2/24"); Fabric b = open("127.0.97.3/24"); Listener listener = b.listen()) {
            // the listener's application never accepts: the connector, polled all along, waits for a reply
            Connector c = a.connect(listener.handle());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
                while (c.poll() == null) {
                    Thread.sleep(5);
                }
            });
            assertFalse(e.getMessage().contains("polled"), e.getMessage());
        }
    }
}

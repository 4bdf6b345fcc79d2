package io.jmesh.nccl;

import io.jmesh.api.Status;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a survivor's WARN says under NCCL when a neighbour rank aborted first (docs/nccl-faults.md). */
class NcclErrorsTest {
    @Test
    void aConnectionClosedMidCollectiveSaysWhereToLookNotToConnectAgain() {
        String why = "the connection to 127.0.120.4:49995 was closed by the peer (everything it sent before its close "
                + "arrived); connect again to go on";
        String s = NcclErrors.describe(Status.CLOSED, why);
        assertTrue(s.startsWith("closed (the connection to 127.0.120.4:49995 was closed by the peer"), s);
        assertFalse(s.contains("connect again"), s);
        assertTrue(s.contains("that rank ended its communicator (ncclCommAbort or ncclCommDestroy)"), s);
        assertTrue(s.contains("which that rank's log names"), s);
        assertTrue(NcclErrors.describe(Status.CLOSED, null).startsWith("closed (the peer closed the connection)"));
    }

    @Test
    void otherFailuresKeepTheTransportsWords() {
        String why = "the peer stopped answering: no sign of life from the process at 127.0.120.3 for 5000 ms";
        assertEquals("connection failed (" + why + ")", NcclErrors.describe(Status.FAILED, why));
        assertEquals("connection failed", NcclErrors.describe(Status.FAILED, null));
    }
}

package io.jmesh.transport.verbs;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class QpStateTest {
    @Test
    void exactlyTheRcOrderIsAllowed() {
        List<String> legal = new ArrayList<>();
        for (QpState from : QpState.values()) {
            for (QpState to : QpState.values()) {
                if (from.canMoveTo(to)) {
                    legal.add(from + "->" + to);
                }
            }
        }
        assertEquals(List.of(
                "RESET->RESET", "RESET->INIT", "RESET->ERROR",
                "INIT->RESET", "INIT->INIT", "INIT->RTR", "INIT->ERROR",
                "RTR->RESET", "RTR->RTS", "RTR->ERROR",
                "RTS->RESET", "RTS->RTS", "RTS->ERROR",
                "ERROR->RESET", "ERROR->ERROR"), legal);
    }

    @Test
    void anIllegalTransitionNamesTheQpAndTheOrder() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> QpState.RESET.checkMoveTo(QpState.RTS, "0x11 on rxe0"));
        assertEquals("queue pair 0x11 on rxe0: cannot go from RESET to RTS; an RC queue pair goes "
                + "RESET -> INIT -> RTR -> RTS (ERROR or RESET from any state)", e.getMessage());
        assertThrows(IllegalStateException.class, () -> QpState.ERROR.checkMoveTo(QpState.RTR, "q"));
        assertThrows(IllegalStateException.class, () -> QpState.RTS.checkMoveTo(QpState.RTR, "q"));
    }

    @Test
    void ibvValuesMatchVerbsH() {
        // enum ibv_qp_state: RESET 0, INIT 1, RTR 2, RTS 3, SQD 4, SQE 5, ERR 6 (also checked against gcc's constants
        // by the bindings' layout test)
        assertEquals(List.of(0, 1, 2, 3, 6), List.of(QpState.values()).stream().map(QpState::ibvValue).toList());
    }

    @Test
    void endpointValidatesAndPicksTheSmallerMtu() {
        byte[] gid = new byte[16];
        assertEquals(3, QpEndpoint.pathMtu(5, 3));
        assertThrows(IllegalArgumentException.class, () -> new QpEndpoint(1 << 24, 0, gid, 3));
        assertThrows(IllegalArgumentException.class, () -> new QpEndpoint(1, 0, new byte[4], 3));
        assertThrows(IllegalArgumentException.class, () -> new QpEndpoint(1, 0, gid, 6));
        assertTrue(new QpEndpoint(0x11, 5, gid, 3).toString().contains("mtu=1024"));
    }
}

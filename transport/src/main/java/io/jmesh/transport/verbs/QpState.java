package io.jmesh.transport.verbs;

/**
 * The states an RC queue pair goes through in jmesh, with the transitions jmesh allows: RESET → INIT → RTR → RTS in
 * that order, ERROR from anywhere (to flush outstanding requests), RESET from anywhere (to reuse a QP). Anything else
 * is a bug in the caller and is refused before the driver sees it.
 */
public enum QpState {
    RESET(0), INIT(1), RTR(2), RTS(3), ERROR(6);

    private final int ibv;

    QpState(int ibv) {
        this.ibv = ibv;
    }

    /** The {@code enum ibv_qp_state} value. */
    public int ibvValue() {
        return ibv;
    }

    /** Whether {@code this → next} is a transition jmesh performs. */
    public boolean canMoveTo(QpState next) {
        return switch (next) {
            case RESET, ERROR -> true;
            case INIT -> this == RESET || this == INIT;
            case RTR -> this == INIT;
            case RTS -> this == RTR || this == RTS;
        };
    }

    /**
     * @throws IllegalStateException naming the QP, both states and the legal order, when the transition is not legal
     */
    public void checkMoveTo(QpState next, String qp) {
        if (!canMoveTo(next)) {
            throw new IllegalStateException("queue pair " + qp + ": cannot go from " + this + " to " + next
                    + "; an RC queue pair goes RESET -> INIT -> RTR -> RTS (ERROR or RESET from any state)");
        }
    }
}

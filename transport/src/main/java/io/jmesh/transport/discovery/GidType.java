package io.jmesh.transport.discovery;

/** The type of a GID table entry, as {@code ibv_query_gid_ex} reports it ({@code enum ibv_gid_type}). */
public enum GidType {
    IB("IB"), ROCE_V1("RoCE v1"), ROCE_V2("RoCE v2"), UNKNOWN("?");

    private final String label;

    GidType(String label) {
        this.label = label;
    }

    /** Maps {@code IBV_GID_TYPE_IB/ROCE_V1/ROCE_V2} (0/1/2). */
    public static GidType of(int ibvGidType) {
        return switch (ibvGidType) {
            case 0 -> IB;
            case 1 -> ROCE_V1;
            case 2 -> ROCE_V2;
            default -> UNKNOWN;
        };
    }

    public String label() {
        return label;
    }
}

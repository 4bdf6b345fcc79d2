package io.jmesh.transport.rdma;

import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Eager;
import io.jmesh.transport.verbs.QpEndpoint;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;

/**
 * What the two ends of a verbs connection exchange in the handshake: one queue pair per rail (QPN, PSN, GID, MTU,
 * the sender of this info's device index for one-sided keys, and, from the connector, which of the listener's
 * addresses the rail goes to) and the one control region the peer writes into: for the sender, its clear-to-send
 * FIFO; for the receiver, its array of received sizes. Between two relay nodes (flag RELAY) the upstream relay pushes
 * records ({@link RelayLayout}) and the downstream one answers with its record ring: the control region is then that
 * ring, and the geometry follows the rails. With EAGER the connector says it sends small messages eagerly ({@link
 * io.jmesh.transport.core.Eager}; the receiver writes the credit word of its control region), and the listener that
 * answers with EAGER has the ring, right after its size array; the ring's geometry follows the rails and must be
 * this version's. Big-endian, validated on decode: it came from the network.
 *
 * <pre>
 *  0 u8  version (3)   1 u8 rails (1..8)   2 u16 flags (RELAY 1, EAGER 2)   4 u32 control rkey   8 u64 control address
 * 16 + 44 * r, per rail:
 *     0 u8 ibv_mtu (1..5)   1 u8 device index   2 u16 0   4 u32 qpn   8 u32 psn   12 u8[16] gid
 *    28 u8[16] target: the listener address this rail connects to (IPv6 or v4-mapped); zero from the listener
 * with RELAY, then: u32 record bytes   u32 records   (zero from the relay that pushes)
 * with EAGER, then: u32 slot bytes   u32 slots   (the eager ring's geometry, the same from both ends)
 * </pre>
 *
 * @param relay       the two ends are relay nodes: records flow between them
 * @param recordBytes the payload bytes of one record slot of the answering relay's ring (0 from the pushing one)
 * @param records     the record slots of that ring (0 from the pushing relay)
 * @param eager       small messages go through the listener's eager ring
 */
public record ConnectInfo(List<Rail> rails, long controlAddress, int controlRkey, boolean relay, int recordBytes,
                          int records, boolean eager) {
    public static final int VERSION = 3;
    static final int HEADER_BYTES = 16;
    static final int RAIL_BYTES = 44;
    static final int RELAY = 1;
    static final int EAGER = 2;
    static final int GEOMETRY_BYTES = 8;

    /**
     * One queue pair of a connection.
     *
     * @param qp          the queue pair's endpoint
     * @param deviceIndex the index of its device among the sending node's devices (picks a region's rkey)
     * @param target      the listener address the rail connects to, or null (from the listener)
     */
    public record Rail(QpEndpoint qp, int deviceIndex, InetAddress target) {
        public Rail {
            if (deviceIndex < 0 || deviceIndex > 255) {
                throw new IllegalArgumentException("device index " + deviceIndex + " out of range 0..255");
            }
        }
    }

    public ConnectInfo {
        if (rails.isEmpty() || rails.size() > Cts.MAX_RAILS) {
            throw new IllegalArgumentException(rails.size() + " rails (1.." + Cts.MAX_RAILS + " allowed)");
        }
        if (recordBytes < 0 || records < 0 || !relay && (recordBytes | records) != 0) {
            throw new IllegalArgumentException("record geometry " + records + " x " + recordBytes + " bytes");
        }
        if (relay && eager) {
            throw new IllegalArgumentException("relay nodes send no eager records");
        }
        rails = List.copyOf(rails);
    }

    /** What a connector, a listener or a relay towards either of them sends. */
    public ConnectInfo(List<Rail> rails, long controlAddress, int controlRkey) {
        this(rails, controlAddress, controlRkey, false, 0, 0, false);
    }

    /** What a relay node sends to the next (records flow between them). */
    public ConnectInfo(List<Rail> rails, long controlAddress, int controlRkey, boolean relay, int recordBytes,
                       int records) {
        this(rails, controlAddress, controlRkey, relay, recordBytes, records, false);
    }

    /** This info with the EAGER flag. */
    public ConnectInfo withEager() {
        return new ConnectInfo(rails, controlAddress, controlRkey, relay, recordBytes, records, true);
    }

    public int bytes() {
        return HEADER_BYTES + RAIL_BYTES * rails.size() + (relay || eager ? GEOMETRY_BYTES : 0);
    }

    public byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(bytes());
        b.put((byte) VERSION).put((byte) rails.size()).putShort((short) ((relay ? RELAY : 0) | (eager ? EAGER : 0)))
                .putInt(controlRkey)
                .putLong(controlAddress);
        for (Rail r : rails) {
            b.put((byte) r.qp().ibvMtu()).put((byte) r.deviceIndex()).putShort((short) 0);
            b.putInt(r.qp().qpn()).putInt(r.qp().psn()).put(r.qp().gid());
            b.put(r.target() == null ? new byte[16] : v6(r.target()));
        }
        if (relay) {
            b.putInt(recordBytes).putInt(records);
        } else if (eager) {
            b.putInt(Eager.SLOT_BYTES).putInt(Eager.SLOTS);
        }
        return b.array();
    }

    private static byte[] v6(InetAddress a) {
        byte[] raw = a.getAddress();
        if (raw.length == 16) {
            return raw;
        }
        byte[] mapped = new byte[16];
        mapped[10] = (byte) 0xff;
        mapped[11] = (byte) 0xff;
        System.arraycopy(raw, 0, mapped, 12, 4);
        return mapped;
    }

    /** @throws IllegalArgumentException "bad jmesh connection info: ..." for anything malformed */
    public static ConnectInfo decode(byte[] bytes) {
        if (bytes == null || bytes.length < HEADER_BYTES) {
            throw bad("expected at least " + HEADER_BYTES + " bytes, got " + (bytes == null ? "none" : bytes.length));
        }
        ByteBuffer b = ByteBuffer.wrap(bytes);
        int version = Byte.toUnsignedInt(b.get());
        if (version != VERSION) {
            throw bad("version " + version + " (this jmesh speaks " + VERSION + "; run the same jmesh on both nodes)");
        }
        int n = Byte.toUnsignedInt(b.get());
        if (n < 1 || n > Cts.MAX_RAILS) {
            throw bad(n + " rails (1.." + Cts.MAX_RAILS + " allowed)");
        }
        int flags = Short.toUnsignedInt(b.getShort());
        if ((flags & ~(RELAY | EAGER)) != 0 || flags == (RELAY | EAGER)) {
            throw bad("unknown flags 0x" + Integer.toHexString(flags));
        }
        boolean relay = flags == RELAY;
        boolean eager = flags == EAGER;
        int expected = HEADER_BYTES + RAIL_BYTES * n + (relay || eager ? GEOMETRY_BYTES : 0);
        if (bytes.length != expected) {
            throw bad(n + " rails" + (relay ? " and a record geometry" : eager ? " and an eager ring geometry" : "")
                    + " need " + expected + " bytes, got " + bytes.length);
        }
        int rkey = b.getInt();
        long address = b.getLong();
        if (address == 0) {
            throw bad("zero control address");
        }
        Rail[] rails = new Rail[n];
        for (int i = 0; i < n; i++) {
            int mtu = Byte.toUnsignedInt(b.get());
            int device = Byte.toUnsignedInt(b.get());
            b.getShort();
            int qpn = b.getInt();
            int psn = b.getInt();
            byte[] gid = new byte[16];
            b.get(gid);
            byte[] target = new byte[16];
            b.get(target);
            if (Arrays.equals(gid, new byte[16])) {
                throw bad("zero GID on rail " + i);
            }
            try {
                rails[i] = new Rail(new QpEndpoint(qpn, psn, gid, mtu), device,
                        Arrays.equals(target, new byte[16]) ? null : InetAddress.getByAddress(target));
            } catch (IllegalArgumentException e) {
                throw bad("rail " + i + ": " + e.getMessage());
            } catch (UnknownHostException e) {
                throw bad("rail " + i + ": " + e.getMessage()); // cannot happen for 16 bytes
            }
        }
        if (eager) {
            int slotBytes = b.getInt();
            int slots = b.getInt();
            if (slotBytes != Eager.SLOT_BYTES || slots != Eager.SLOTS) {
                throw bad("eager ring of " + Integer.toUnsignedString(slots) + " x " + Integer.toUnsignedString(
                        slotBytes) + " bytes, this jmesh has " + Eager.SLOTS + " x " + Eager.SLOT_BYTES
                        + " (run the same jmesh on both nodes, or JMESH_EAGER_THRESHOLD=0 on the sending node)");
            }
            return new ConnectInfo(List.of(rails), address, rkey).withEager();
        }
        if (!relay) {
            return new ConnectInfo(List.of(rails), address, rkey);
        }
        long recordBytes = Integer.toUnsignedLong(b.getInt());
        long records = Integer.toUnsignedLong(b.getInt());
        if (recordBytes > Integer.MAX_VALUE || records > Integer.MAX_VALUE) {
            throw bad("record geometry " + records + " x " + recordBytes + " bytes");
        }
        return new ConnectInfo(List.of(rails), address, rkey, true, (int) recordBytes, (int) records);
    }

    private static IllegalArgumentException bad(String why) {
        return new IllegalArgumentException("bad jmesh connection info: " + why);
    }
}

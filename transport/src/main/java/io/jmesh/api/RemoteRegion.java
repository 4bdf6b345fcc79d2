package io.jmesh.api;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;

/**
 * What a peer needs to write into or read from one of this node's registrations without its help: the address and
 * length of the registered memory and its access keys. Obtain it with {@link Registration#remote()}, send its {@link
 * #encode() bytes} to the peer by any means (e.g. as a message over a jmesh connection), and the peer passes {@link
 * #decode decoded} bytes to {@link Sender#write} or {@link Sender#read}.
 *
 * <p>On verbs the keys are the memory region's rkeys, one per RDMA device of the owning node in that node's device
 * order (a connection uses the key of the device its peer end runs on); on TCP there is one key, a random 64-bit
 * identifier of the registration (as two ints, high half first), and the owner's receiver applies writes and serves
 * reads while its application polls it.
 *
 * <pre>{@code
 * byte[] wire = registration.remote().encode();                   // on the owner; at most 64 + 4 * keys bytes
 * RemoteRegion target = RemoteRegion.decode(wire);                // on the peer
 * int req = sender.write(local, 0, 4096, target, 0);              // then sender.test(req) until 1
 * }</pre>
 *
 * @param provider "rdma" or "tcp"; a region is only usable over a connection of the same provider
 * @param address  the virtual address of the memory's first byte on the owner
 * @param length   bytes accessible from {@code address}
 * @param keys     rkeys (verbs, one per device) or the registration's identifier split in two ints (TCP)
 */
public record RemoteRegion(String provider, long address, long length, int[] keys) {
    private static final int MAGIC = 0x4a4d5252; // "JMRR"
    private static final int VERSION = 1;
    /** More keys than any node has devices is malformed input. */
    public static final int MAX_KEYS = 64;

    public RemoteRegion {
        Objects.requireNonNull(provider, "provider");
        Objects.requireNonNull(keys, "keys");
        if (!provider.equals("rdma") && !provider.equals("tcp")) {
            throw new IllegalArgumentException("unknown provider '" + provider + "' in a remote region");
        }
        if (length < 0 || keys.length == 0 || keys.length > MAX_KEYS) {
            throw new IllegalArgumentException("bad remote region: length " + length + ", " + keys.length + " keys");
        }
        keys = keys.clone();
    }

    @Override
    public int[] keys() {
        return keys.clone();
    }

    /** Key i without a copy (the data path reads it per operation). */
    public int key(int i) {
        return keys[i];
    }

    public int keyCount() {
        return keys.length;
    }

    /** True when [offset, offset + len) lies inside the region. */
    public boolean contains(long offset, long len) {
        return offset >= 0 && len >= 0 && offset <= length - len;
    }

    /** The portable form: magic, version, provider, address, length, keys; big-endian. */
    public byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(24 + 4 + 4 * keys.length);
        b.putInt(MAGIC).put((byte) VERSION).put((byte) (provider.equals("rdma") ? 1 : 2)).putShort((short) 0);
        b.putLong(address).putLong(length).putInt(keys.length);
        for (int k : keys) {
            b.putInt(k);
        }
        return b.array();
    }

    /**
     * Reads a region a peer sent.
     *
     * @throws IllegalArgumentException "bad remote region: ..." for anything malformed
     */
    public static RemoteRegion decode(byte[] bytes) {
        if (bytes == null || bytes.length < 28) {
            throw bad("expected at least 28 bytes, got " + (bytes == null ? "none" : bytes.length));
        }
        ByteBuffer b = ByteBuffer.wrap(bytes);
        if (b.getInt() != MAGIC) {
            throw bad("wrong magic (not a jmesh remote region)");
        }
        int version = Byte.toUnsignedInt(b.get());
        if (version != VERSION) {
            throw bad("version " + version + " (this jmesh reads " + VERSION + ")");
        }
        int kind = Byte.toUnsignedInt(b.get());
        if (kind != 1 && kind != 2) {
            throw bad("unknown provider code " + kind);
        }
        b.getShort();
        long address = b.getLong();
        long length = b.getLong();
        int n = b.getInt();
        if (n < 1 || n > MAX_KEYS || bytes.length != 28 + 4 * n) {
            throw bad(n + " keys in " + bytes.length + " bytes");
        }
        if (length < 0) {
            throw bad("negative length " + length);
        }
        int[] keys = new int[n];
        for (int i = 0; i < n; i++) {
            keys[i] = b.getInt();
        }
        return new RemoteRegion(kind == 1 ? "rdma" : "tcp", address, length, keys);
    }

    private static IllegalArgumentException bad(String why) {
        return new IllegalArgumentException("bad remote region: " + why);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RemoteRegion r && r.provider.equals(provider) && r.address == address
                && r.length == length && Arrays.equals(r.keys, keys);
    }

    @Override
    public int hashCode() {
        return Objects.hash(provider, address, length, Arrays.hashCode(keys));
    }

    @Override
    public String toString() {
        return "RemoteRegion[" + provider + " " + length + " bytes at 0x" + Long.toHexString(address) + ", keys "
                + Arrays.toString(keys) + "]";
    }
}

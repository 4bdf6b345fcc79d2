package io.jmesh.transport.tcp;

import java.security.SecureRandom;

/**
 * The open registrations of one TCP provider by their random 64-bit id, for one-sided operations from peers: a peer
 * names a registration by the id in its {@link io.jmesh.api.RemoteRegion}, and the owner's receiver looks it up here
 * for every request. A closed registration is removed, so later requests naming it are refused.
 *
 * <p>Lookups run on the data path of any receiver thread and neither lock nor allocate: the table is an immutable
 * open-addressing snapshot behind a volatile reference, rebuilt (under this object's lock) only when a registration
 * is added or removed.
 */
final class TcpRegistry {
    private static final SecureRandom RANDOM = new SecureRandom();

    /** An immutable open-addressing table; id 0 marks an empty slot (ids are never 0). */
    private record Table(long[] ids, TcpRegistration[] registrations, int count) {
    }

    private volatile Table table = new Table(new long[8], new TcpRegistration[8], 0);

    /** Adds {@code r} under a fresh random id and returns the id. */
    synchronized long add(TcpRegistration r) {
        long id;
        do {
            id = RANDOM.nextLong();
        } while (id == 0 || find(table, id) != null);
        Table t = table;
        int capacity = t.ids.length;
        while ((t.count + 1) * 2 > capacity) {
            capacity *= 2;
        }
        table = rebuild(t, capacity, id, r, 0);
        return id;
    }

    /** Removes the registration with {@code id}, if present. */
    synchronized void remove(long id) {
        Table t = table;
        if (find(t, id) != null) {
            table = rebuild(t, t.ids.length, 0, null, id);
        }
    }

    /** The open registration with {@code id}, or null. Lock- and allocation-free. */
    TcpRegistration lookup(long id) {
        return id == 0 ? null : find(table, id);
    }

    int size() {
        return table.count;
    }

    private static TcpRegistration find(Table t, long id) {
        long[] ids = t.ids;
        int mask = ids.length - 1;
        for (int i = hash(id) & mask; ; i = (i + 1) & mask) {
            if (ids[i] == id) {
                return t.registrations[i];
            }
            if (ids[i] == 0) {
                return null;
            }
        }
    }

    /** A new table of {@code capacity} with every entry of {@code t} but {@code drop}, plus {@code add} if non-zero. */
    private static Table rebuild(Table t, int capacity, long add, TcpRegistration r, long drop) {
        long[] ids = new long[capacity];
        TcpRegistration[] regs = new TcpRegistration[capacity];
        int count = 0;
        for (int i = 0; i < t.ids.length; i++) {
            if (t.ids[i] != 0 && t.ids[i] != drop) {
                put(ids, regs, t.ids[i], t.registrations[i]);
                count++;
            }
        }
        if (add != 0) {
            put(ids, regs, add, r);
            count++;
        }
        if (capacity > 8 && count * 8 < capacity) {
            return rebuild(new Table(ids, regs, count), capacity / 2, 0, null, 0);
        }
        return new Table(ids, regs, count);
    }

    private static void put(long[] ids, TcpRegistration[] regs, long id, TcpRegistration r) {
        int mask = ids.length - 1;
        int i = hash(id) & mask;
        while (ids[i] != 0) {
            i = (i + 1) & mask;
        }
        ids[i] = id;
        regs[i] = r;
    }

    private static int hash(long id) {
        long h = id * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32));
    }

    @Override
    public String toString() {
        return "TcpRegistry[" + table.count + " open]"; // ids are capabilities: never logged
    }
}

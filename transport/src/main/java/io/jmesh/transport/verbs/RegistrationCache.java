package io.jmesh.transport.verbs;

import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reuses memory registrations: a request for [address, address + length) is served by an existing registration whose
 * page range covers it, or registers the request's whole pages. Registrations are reference-counted and deregistered
 * when the last user releases them. Registering is a control-path operation (it pins memory and talks to the kernel),
 * so the cache is synchronized; the data path only reads lkey/rkey from what {@link #acquire} returned.
 *
 * <pre>{@code
 * RegistrationCache<MemoryRegion> cache = new RegistrationCache<>(4096,
 *         (start, len) -> new MemoryRegion(pd, MemorySegment.ofAddress(start).reinterpret(len), access),
 *         MemoryRegion::close);
 * var reg = cache.acquire(buffer.address(), buffer.byteSize());
 * int lkey = reg.region().lkey();
 * cache.release(reg);
 * }</pre>
 *
 * @param <R> the registered object, e.g. {@link MemoryRegion}
 */
public final class RegistrationCache<R> implements AutoCloseable {
    private static final Logger LOG = JmeshLog.logger(RegistrationCache.class);

    /** Registers and deregisters page ranges. */
    public interface Registrar<R> {
        R register(long pageStart, long pageLength);

        void deregister(R region);
    }

    /** One cached registration of [start, end) pages. */
    public static final class Registration<R> {
        private final long start;
        private final long end;
        private final R region;
        private int references;

        Registration(long start, long end, R region) {
            this.start = start;
            this.end = end;
            this.region = region;
        }

        public R region() {
            return region;
        }

        public long start() {
            return start;
        }

        public long end() {
            return end;
        }
    }

    private final long pageSize;
    private final Registrar<R> registrar;
    private final TreeMap<Long, List<Registration<R>>> byStart = new TreeMap<>();
    private boolean closed;

    public RegistrationCache(long pageSize, Registrar<R> registrar) {
        if (pageSize <= 0 || Long.bitCount(pageSize) != 1) {
            throw new IllegalArgumentException("page size must be a power of two, not " + pageSize);
        }
        this.pageSize = pageSize;
        this.registrar = registrar;
    }

    /** A registration covering [address, address + length), shared when one exists; release it when done. */
    public synchronized Registration<R> acquire(long address, long length) {
        if (closed) {
            throw new IllegalStateException("the registration cache is closed");
        }
        if (length < 0 || address < 0 || address + length < address) {
            throw new IllegalArgumentException("bad memory range 0x" + Long.toHexString(address) + "+" + length);
        }
        long start = address & -pageSize;
        long end = Math.max(start + pageSize, (address + length + pageSize - 1) & -pageSize);
        for (Map.Entry<Long, List<Registration<R>>> e : byStart.headMap(start, true).descendingMap().entrySet()) {
            for (Registration<R> r : e.getValue()) {
                if (r.end >= end) {
                    r.references++;
                    return r;
                }
            }
        }
        Registration<R> r = new Registration<>(start, end, registrar.register(start, end - start));
        r.references = 1;
        byStart.computeIfAbsent(start, k -> new ArrayList<>(1)).add(r);
        return r;
    }

    /** Drops one reference; the last one deregisters. */
    public synchronized void release(Registration<R> r) {
        if (r.references <= 0) {
            throw new IllegalStateException("registration 0x" + Long.toHexString(r.start) + ".." + Long.toHexString(r.end)
                    + " released more often than acquired");
        }
        if (--r.references == 0) {
            List<Registration<R>> list = byStart.get(r.start);
            if (list != null) {
                list.remove(r);
                if (list.isEmpty()) {
                    byStart.remove(r.start);
                }
            }
            registrar.deregister(r.region);
        }
    }

    /** Number of live registrations. */
    public synchronized int size() {
        return byStart.values().stream().mapToInt(List::size).sum();
    }

    /** Deregisters everything; registrations still referenced are reported, then deregistered anyway. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException first = null;
        for (List<Registration<R>> list : byStart.values()) {
            for (Registration<R> r : list) {
                if (r.references > 0) {
                    LOG.warn("closing with registration 0x{}..0x{} still referenced {} time(s)",
                            Long.toHexString(r.start), Long.toHexString(r.end), r.references);
                }
                try {
                    registrar.deregister(r.region);
                } catch (RuntimeException e) {
                    if (first == null) {
                        first = e;
                    }
                }
            }
        }
        byStart.clear();
        if (first != null) {
            throw first;
        }
    }
}

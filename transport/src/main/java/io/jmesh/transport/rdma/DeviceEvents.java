package io.jmesh.transport.rdma;

import io.jmesh.transport.core.Fate;
import io.jmesh.transport.verbs.DeviceContext;
import io.jmesh.verbs.AsyncEvents;
import io.jmesh.posix.Errno;
import io.jmesh.verbs.ffi.verbs_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

/**
 * Reads the asynchronous events of a provider's devices on one daemon thread, {@value #THREAD_NAME}, as NCCL's IB
 * transport does: every event is logged with what it means, and the ones that end connections fail them at once with
 * the cause, instead of leaving them to a work request that times out (≈ 39 s with the default retries). A port that
 * goes down fails every connection over it; a queue pair or completion queue in error fails its connection; a fatal
 * device error fails every connection on the device. The thread waits in {@code poll(2)} for at most
 * {@value #POLL_MILLIS} ms at a time, so closing it never waits on the kernel, and it acknowledges each event at once
 * (destroying a queue pair waits for its events to be acknowledged).
 */
final class DeviceEvents implements AutoCloseable {
    static final String THREAD_NAME = "jmesh-verbs-events";
    static final int POLL_MILLIS = 100;
    private static final Logger LOG = JmeshLog.logger(DeviceEvents.class);

    /** One end of a connection whose queue pair and completion queue are watched. */
    private record Watched(Fate fate, String device, int port) {
    }

    private final List<DeviceContext> devices = new CopyOnWriteArrayList<>();
    private final Map<Long, Watched> byQp = new ConcurrentHashMap<>();
    private final Map<Long, Watched> byCq = new ConcurrentHashMap<>();
    private final Thread thread = Thread.ofPlatform().daemon().name(THREAD_NAME).unstarted(this::run);
    private volatile boolean running = true;

    /** Starts reading a device's events; called once per opened device, before anything is made from it. */
    synchronized void add(DeviceContext device) {
        if (!running) {
            return;
        }
        AsyncEvents.nonBlocking(AsyncEvents.fd(device.handle()), device.name());
        devices.add(device);
        if (thread.getState() == Thread.State.NEW) {
            thread.start();
        }
    }

    /**
     * Stops reading a device that is about to close (its open failed half-way). The thread may be in poll(2) on its
     * descriptor for up to {@value #POLL_MILLIS} ms; closing a descriptor under poll(2) only ends that poll.
     */
    void remove(DeviceContext device) {
        devices.remove(device);
    }

    /** Fails {@code fate} on the events of {@code rail}'s queue pair, completion queue, port and device. */
    void watch(Endpoint rail, Fate fate) {
        Watched w = new Watched(fate, rail.device.name(), rail.port);
        byQp.put(rail.qp.handle().address(), w);
        byCq.put(rail.cq.handle().address(), w);
    }

    /** Stops the thread (within one poll interval); the devices stay open for their owner to close. */
    @Override
    public void close() {
        running = false;
        if (thread.getState() != Thread.State.NEW && Thread.currentThread() != thread) {
            try {
                thread.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void run() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment event = AsyncEvents.allocateEvent(arena);
            MemorySegment fds = MemorySegment.NULL;
            int capacity = 0;
            long nextSweep = System.nanoTime();
            while (running) {
                List<DeviceContext> now = List.copyOf(devices);
                if (now.size() > capacity) {
                    capacity = now.size() * 2;
                    fds = arena.allocate(AsyncEvents.POLLFD, capacity);
                }
                for (int i = 0; i < now.size(); i++) {
                    MemorySegment fd = fds.asSlice(i * AsyncEvents.POLLFD.byteSize(), AsyncEvents.POLLFD);
                    fd.set(ValueLayout.JAVA_INT, 0, AsyncEvents.fd(now.get(i).handle()));
                    fd.set(ValueLayout.JAVA_SHORT, 4, AsyncEvents.POLLIN);
                    fd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
                }
                int rc = AsyncEvents.poll(fds, now.size(), POLL_MILLIS);
                if (rc < 0) {
                    LOG.error("jmesh verbs: poll on the devices' event descriptors failed: {}; events are not read "
                            + "any more", Errno.describe(-rc));
                    return;
                }
                for (int i = 0; i < now.size() && rc > 0 && running; i++) {
                    short revents = fds.get(ValueLayout.JAVA_SHORT,
                            i * AsyncEvents.POLLFD.byteSize() + 6);
                    if (revents != 0) {
                        drain(now.get(i), event);
                    }
                }
                if (System.nanoTime() - nextSweep > 0) { // forget connections that ended
                    byQp.values().removeIf(w -> w.fate.state() != 0);
                    byCq.values().removeIf(w -> w.fate.state() != 0);
                    nextSweep = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
                }
            }
        } catch (RuntimeException | Error e) {
            LOG.error("jmesh verbs: the device event thread failed; events are not read any more", e);
        }
    }

    private void drain(DeviceContext device, MemorySegment event) {
        int errno = Errno.EAGAIN;
        while (running && (errno = AsyncEvents.next(device.handle(), event)) == 0) {
            try {
                handle(device, event);
            } finally {
                AsyncEvents.ack(event);
            }
        }
        if (running && errno != Errno.EAGAIN) {
            devices.remove(device); // it would be readable forever: stop asking rather than spin
            LOG.error("jmesh verbs: ibv_get_async_event on {} failed: {}; its events are not read any more",
                    device.name(), Errno.describe(errno));
        }
    }

    private void handle(DeviceContext device, MemorySegment event) {
        int type = AsyncEvents.type(event);
        String what = AsyncEvents.describe(type) + " (" + meaning(type) + ")";
        if (type == verbs_h.IBV_EVENT_PORT_ERR() || type == verbs_h.IBV_EVENT_PORT_ACTIVE()
                || type == verbs_h.IBV_EVENT_GID_CHANGE() || type == verbs_h.IBV_EVENT_LID_CHANGE()
                || type == verbs_h.IBV_EVENT_PKEY_CHANGE() || type == verbs_h.IBV_EVENT_SM_CHANGE()
                || type == verbs_h.IBV_EVENT_CLIENT_REREGISTER()) {
            int port = AsyncEvents.port(event);
            String where = device.name() + ":" + port;
            if (type == verbs_h.IBV_EVENT_PORT_ERR()) {
                int n = failAll(w -> w.device.equals(device.name()) && w.port == port, "the port " + where
                        + " under this connection went down: " + what + "; check the link with 'ip link' and "
                        + "'jmesh devices' on this node, then connect again");
                LOG.warn("jmesh verbs: {}: {}; {} connection end(s) failed", where, what, n);
            } else {
                LOG.info("jmesh verbs: {}: {}", where, what);
            }
        } else if (type == verbs_h.IBV_EVENT_DEVICE_FATAL()) {
            int n = failAll(w -> w.device.equals(device.name()), "the device " + device.name() + " failed: " + what
                    + "; see 'dmesg', then restart the program (the device must be opened again)");
            LOG.error("jmesh verbs: {}: {}; {} connection end(s) failed", device.name(), what, n);
        } else if (type == verbs_h.IBV_EVENT_CQ_ERR()) {
            fail(byCq.get(AsyncEvents.cq(event).address()), device, what, "completion queue");
        } else if (type == verbs_h.IBV_EVENT_QP_FATAL() || type == verbs_h.IBV_EVENT_QP_REQ_ERR()
                || type == verbs_h.IBV_EVENT_QP_ACCESS_ERR() || type == verbs_h.IBV_EVENT_PATH_MIG_ERR()) {
            fail(byQp.get(AsyncEvents.qp(event).address()), device, what, "queue pair");
        } else if (type == verbs_h.IBV_EVENT_COMM_EST() || type == verbs_h.IBV_EVENT_SQ_DRAINED()
                || type == verbs_h.IBV_EVENT_QP_LAST_WQE_REACHED()) {
            LOG.debug("jmesh verbs: {}: {}", device.name(), what);
        } else {
            LOG.info("jmesh verbs: {}: {}", device.name(), what);
        }
    }

    private void fail(Watched w, DeviceContext device, String what, String object) {
        if (w == null) {
            LOG.warn("jmesh verbs: {}: {} on a {} of no open connection (a relay's, or one that just closed)",
                    device.name(), what, object);
            return;
        }
        LOG.warn("jmesh verbs: {}: {} on a connection's {}", device.name(), what, object);
        w.fate.fail("the " + object + " of this connection on " + device.name() + " failed: " + what
                + " (the peer broke the protocol, or the device did; see 'dmesg')");
    }

    private int failAll(Predicate<Watched> which, String why) {
        int n = 0;
        for (Watched w : byQp.values()) {
            if (which.test(w) && w.fate.state() == 0) {
                w.fate.fail(why);
                n++;
            }
        }
        return n;
    }

    /** What an event means, in the words of the verbs documentation. */
    static String meaning(int type) {
        if (type == verbs_h.IBV_EVENT_PORT_ERR()) {
            return "the link went down: a cable, the peer's port, or the network interface set down";
        } else if (type == verbs_h.IBV_EVENT_PORT_ACTIVE()) {
            return "the link is up again";
        } else if (type == verbs_h.IBV_EVENT_GID_CHANGE()) {
            return "the port's GID table changed: an address was added or removed";
        } else if (type == verbs_h.IBV_EVENT_DEVICE_FATAL()) {
            return "the device hit an unrecoverable error";
        } else if (type == verbs_h.IBV_EVENT_CQ_ERR()) {
            return "a completion queue overran or failed";
        } else if (type == verbs_h.IBV_EVENT_QP_FATAL()) {
            return "a queue pair hit an error it could not report in a completion and went to the error state";
        } else if (type == verbs_h.IBV_EVENT_QP_REQ_ERR()) {
            return "the peer's requests broke the transport's rules";
        } else if (type == verbs_h.IBV_EVENT_QP_ACCESS_ERR()) {
            return "a remote access broke a memory registration's permissions";
        } else if (type == verbs_h.IBV_EVENT_PATH_MIG_ERR()) {
            return "the alternate path could not be loaded";
        } else if (type == verbs_h.IBV_EVENT_COMM_EST()) {
            return "the first packet arrived on a queue pair";
        } else if (type == verbs_h.IBV_EVENT_LID_CHANGE() || type == verbs_h.IBV_EVENT_PKEY_CHANGE()
                || type == verbs_h.IBV_EVENT_SM_CHANGE() || type == verbs_h.IBV_EVENT_CLIENT_REREGISTER()) {
            return "an InfiniBand subnet manager event; nothing to do on RoCE";
        }
        return "not used by jmesh";
    }
}

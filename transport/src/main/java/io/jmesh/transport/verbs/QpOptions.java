package io.jmesh.transport.verbs;

/**
 * How a queue pair is created and connected. The defaults are NCCL's IB transport's: ACK timeout 20, retry count 7,
 * RNR retry 7; the depths allow 32 requests in flight with room for the flow-control writes. Two gather entries per
 * send: a relayed sender writes a small buffer and its descriptor in one write (every RDMA NIC allows far more).
 *
 * @param maxSendWr   send queue depth
 * @param maxRecvWr   receive queue depth
 * @param maxSendSge  scatter-gather entries per send
 * @param maxRecvSge  scatter-gather entries per receive
 * @param maxInline   bytes that may be sent inline
 * @param timeout     local ACK timeout exponent (4.096 us * 2^timeout)
 * @param retryCount  transport retries
 * @param rnrRetry    receiver-not-ready retries (7 = forever)
 * @param serviceLevel service level
 * @param trafficClass GRH traffic class
 * @param hopLimit    GRH hop limit
 */
public record QpOptions(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInline, int timeout,
                        int retryCount, int rnrRetry, int serviceLevel, int trafficClass, int hopLimit) {
    /**
     * Inline bytes asked for, perftest's default for its latency tests: small eager records, clear-to-send entries
     * and credits are copied into the work request at post time, so the NIC reads no memory for them. A device that
     * grants less gets a queue pair without inline sends ({@link QueuePair}).
     */
    public static final int INLINE = 220;

    /** The default depths with these timeouts and retries ({@code JMESH_IB_*}). */
    public static QpOptions of(int timeout, int retryCount, int rnrRetry, int serviceLevel, int trafficClass) {
        return new QpOptions(256, 256, 2, 1, INLINE, timeout, retryCount, rnrRetry, serviceLevel, trafficClass, 64);
    }
}

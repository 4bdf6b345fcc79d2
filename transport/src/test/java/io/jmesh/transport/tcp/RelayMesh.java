package io.jmesh.transport.tcp;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Setting;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.api.ListenHandle;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import static io.jmesh.transport.tcp.TcpTestSupport.await;

/**
 * Loopback meshes for the relay tests: each node is a TCP provider on 127.x addresses, one /24 per link, all on one
 * route port of their own (a random one, so that no other test's fabrics take part).
 */
final class RelayMesh implements AutoCloseable {
    final int routePort = ThreadLocalRandom.current().nextInt(20_000, 30_000);
    final String net;
    final List<TcpProvider> nodes = new ArrayList<>();
    private final List<AutoCloseable> owned = new ArrayList<>();

    /** @param net the first two octets of every address, e.g. "127.61" */
    RelayMesh(String net) {
        this.net = net;
    }

    /** "127.61.L.H/24" for link L and host H. */
    String address(int link, int host) {
        return net + "." + link + "." + host;
    }

    /** A node with one address per link, host number {@code host}; {@code extra}: more settings, name then value. */
    TcpProvider node(int host, int[] links, String... extra) {
        StringBuilder sb = new StringBuilder();
        for (int l : links) {
            sb.append(sb.isEmpty() ? "" : ",").append(address(l, host)).append("/24");
        }
        String[] all = new String[extra.length + 2];
        all[0] = Setting.ROUTE_PORT.property();
        all[1] = Integer.toString(routePort);
        System.arraycopy(extra, 0, all, 2, extra.length);
        TcpProvider p = TcpTestSupport.provider(sb.toString(), all);
        nodes.add(p);
        owned.add(p);
        return p;
    }

    /** A line: node i (host i + 1) on links i and i + 1, the ends on one link each; {@code extra} as in node(). */
    static RelayMesh line(String net, int n, String... extra) {
        RelayMesh m = new RelayMesh(net);
        for (int i = 0; i < n; i++) {
            m.node(i + 1, i == 0 ? new int[] {1} : i == n - 1 ? new int[] {i} : new int[] {i, i + 1}, extra);
        }
        return m;
    }

    /** A ring of 4: node i (host i + 1) on links i + 1 and i (link 0 being link 4). */
    static RelayMesh ring4(String net) {
        RelayMesh m = new RelayMesh(net);
        for (int i = 0; i < 4; i++) {
            m.node(i + 1, new int[] {i == 0 ? 4 : i, i + 1});
        }
        return m;
    }

    TcpListener listen(TcpProvider p) throws Exception {
        TcpListener l = p.listen();
        owned.add(l);
        return l;
    }

    /** Connects and accepts (a relayed connect may first wait for route discovery). */
    TcpTestSupport.Pair connect(TcpProvider from, TcpListener to) throws Exception {
        TcpConnect c = from.connect(ListenHandle.decode(to.handle()));
        CoreSender[] s = new CoreSender[1];
        CoreReceiver[] r = new CoreReceiver[1];
        await("connect " + c.route(), () -> {
            if (s[0] == null) {
                s[0] = c.poll();
            }
            if (r[0] == null) {
                r[0] = to.accept();
            }
            return s[0] != null && r[0] != null;
        });
        owned.add(s[0]);
        owned.add(r[0]);
        lastRoute = c.route();
        return new TcpTestSupport.Pair(s[0], r[0]);
    }

    /** The route of the latest {@link #connect}. */
    String lastRoute;

    @Override
    public void close() {
        CloseHelper.closeAll(owned.reversed());
    }
}

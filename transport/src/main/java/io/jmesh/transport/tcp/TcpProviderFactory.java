package io.jmesh.transport.tcp;

import io.jmesh.api.Context;
import io.jmesh.api.spi.Provider;
import io.jmesh.api.spi.ProviderFactory;

import java.util.List;

/** The TCP provider for {@link java.util.ServiceLoader}: "tcp", what {@code auto} takes where verbs cannot run. */
public final class TcpProviderFactory implements ProviderFactory {
    @Override
    public String name() {
        return "tcp";
    }

    @Override
    public List<String> aliases() {
        return List.of("socket");
    }

    @Override
    public int autoOrder() {
        return 100;
    }

    @Override
    public Provider open(Context context) {
        return TcpProvider.open(context);
    }
}

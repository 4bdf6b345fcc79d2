package io.jmesh.transport.rdma;

import io.jmesh.api.Context;
import io.jmesh.api.ProviderUnavailableException;
import io.jmesh.api.spi.Provider;
import io.jmesh.api.spi.ProviderFactory;
import io.jmesh.verbs.VerbsUnavailableException;

import java.util.List;

/** The verbs provider for {@link java.util.ServiceLoader}: "rdma", the first one {@code auto} tries. */
public final class RdmaProviderFactory implements ProviderFactory {
    @Override
    public String name() {
        return "rdma";
    }

    @Override
    public List<String> aliases() {
        return List.of("verbs", "ib", "roce");
    }

    @Override
    public int autoOrder() {
        return 0;
    }

    @Override
    public Provider open(Context context) {
        try {
            return RdmaProvider.open(context);
        } catch (VerbsUnavailableException e) {
            throw new ProviderUnavailableException(name(), e.getMessage(), e);
        }
    }
}

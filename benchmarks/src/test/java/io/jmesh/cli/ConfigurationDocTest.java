package io.jmesh.cli;

import io.jmesh.transport.config.JmeshConfig;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** docs/configuration.md stays true to the code: every setting JmeshConfig reads is listed with all its names. */
class ConfigurationDocTest {
    @Test
    void everySettingIsDocumentedWithAllItsNames() throws Exception {
        Path doc = Path.of("..", "docs", "configuration.md");
        String text = Files.readString(doc);
        for (JmeshConfig.Key k : JmeshConfig.keys()) {
            String row = text.lines().filter(l -> l.startsWith("| `" + k.env() + "` ")).findFirst()
                    .orElseThrow(() -> new AssertionError(k.env() + " is not in " + doc + " (add a row for it)"));
            assertTrue(row.contains("`" + k.property() + "`"), k.env() + ": property " + k.property() + " missing");
            if (k.seedEnv() != null) {
                assertTrue(row.contains("`" + k.seedEnv() + "`"), k.env() + ": seed name " + k.seedEnv() + " missing");
            }
        }
    }
}

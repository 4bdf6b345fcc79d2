package io.jmesh.cli;

import io.jmesh.api.Context;
import io.jmesh.api.Setting;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/configuration.md stays true to the code: every {@link Setting} is listed with all its names and with the
 * default a fresh {@link Context} has.
 */
class ConfigurationDocTest {
    @Test
    void everySettingIsDocumentedWithAllItsNamesAndItsDefault() throws Exception {
        Path doc = Path.of("..", "docs", "configuration.md");
        String text = Files.readString(doc);
        Context defaults = Context.from(Map.of(), Map.of());
        for (Setting s : Setting.values()) {
            String row = text.lines().filter(l -> l.startsWith("| `" + s.env() + "` ")).findFirst()
                    .orElseThrow(() -> new AssertionError(s.env() + " is not in " + doc + " (add a row for it)"));
            // | env | property | seed name | default | what it does |
            String[] cells = row.split("\\|");
            assertTrue(cells.length >= 6, s.env() + ": expected five columns in: " + row);
            assertEquals("`" + s.property() + "`", cells[2].trim(), s.env() + ": property");
            String seed = s.seedEnv() == null ? "–" : "`" + s.seedEnv() + "`";
            assertEquals(seed, cells[3].trim(), s.env() + ": seed name");
            assertEquals(defaults.valueText(s), cells[4].trim().replace("`", ""), s.env() + ": default");
        }
    }
}

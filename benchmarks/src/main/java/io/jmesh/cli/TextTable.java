package io.jmesh.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/** A plain left-aligned text table, columns as wide as their widest cell. */
final class TextTable {
    private final List<String[]> rows = new ArrayList<>();
    private final int columns;

    TextTable(String... header) {
        columns = header.length;
        rows.add(header);
    }

    void add(Object... cells) {
        if (cells.length != columns) {
            throw new IllegalArgumentException("expected " + columns + " cells, got " + cells.length);
        }
        String[] row = new String[columns];
        for (int i = 0; i < columns; i++) {
            row[i] = String.valueOf(cells[i]);
        }
        rows.add(row);
    }

    void print(PrintStream out) {
        int[] width = new int[columns];
        for (String[] r : rows) {
            for (int i = 0; i < columns; i++) {
                width[i] = Math.max(width[i], r[i].length());
            }
        }
        StringBuilder sb = new StringBuilder();
        for (String[] r : rows) {
            sb.setLength(0);
            for (int i = 0; i < columns; i++) {
                sb.append(r[i]);
                if (i < columns - 1) {
                    sb.append(" ".repeat(width[i] - r[i].length() + 2));
                }
            }
            out.println(sb.toString().stripTrailing());
        }
    }
}

package io.jmesh.cli.doctor;

import java.util.Objects;

/**
 * One result of 'jmesh doctor'.
 *
 * @param status what the check found
 * @param title  what was checked and the finding, one line
 * @param fix    what to do, for WARN and FAIL; null for OK
 */
public record Check(Status status, String title, String fix) {
    /** In order of severity: OK, WARN, FAIL. */
    public enum Status { OK, WARN, FAIL }

    public Check {
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(title, "title");
        if ((status == Status.WARN || status == Status.FAIL) && (fix == null || fix.isBlank())) {
            throw new IllegalArgumentException("a failed check needs its fix: " + title);
        }
    }

    public static Check ok(String title) {
        return new Check(Status.OK, title, null);
    }

    public static Check warn(String title, String fix) {
        return new Check(Status.WARN, title, fix);
    }

    public static Check fail(String title, String fix) {
        return new Check(Status.FAIL, title, fix);
    }

    /** {@code [ OK ] title} and, for a problem, an indented {@code fix:} line. */
    public String render() {
        String tag = switch (status) {
            case OK -> "[ OK ]";
            case WARN -> "[WARN]";
            case FAIL -> "[FAIL]";
        };
        return fix == null ? tag + " " + title : tag + " " + title + "\n       fix: " + fix;
    }
}

package io.jmesh.verbs;

/**
 * A verbs call failed on the control path (open, allocate, register, create, modify). The message names the call,
 * the object it was made on, the errno and, where one is known, what to do about it.
 */
public class VerbsException extends RuntimeException {
    private final int errno;

    public VerbsException(String message, int errno) {
        super(message);
        this.errno = errno;
    }

    public VerbsException(String message) {
        this(message, 0);
    }

    /** The errno the call reported, or 0 if it reported none. */
    public int errno() {
        return errno;
    }
}

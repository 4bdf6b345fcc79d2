package io.jmesh.transport.lifecycle;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The transport's closer keeps the contract of the public CloseHelper (CloseHelperTest), case for case. */
class CloserTest {
    private final List<String> closed = new ArrayList<>();

    private AutoCloseable ok(String name) {
        return () -> closed.add(name);
    }

    private AutoCloseable failing(String name, Exception e) {
        return () -> {
            closed.add(name);
            throw e;
        };
    }

    @Test
    void closesEveryOneInOrderAndSkipsNulls() {
        Closer.closeAll(ok("a"), null, ok("b"), ok("c"));
        assertEquals(List.of("a", "b", "c"), closed);
        Closer.closeAll(List.of(ok("d"), ok("e")).reversed());
        assertEquals(List.of("a", "b", "c", "e", "d"), closed);
        Closer.closeAll((AutoCloseable[]) null);
        Closer.closeAll((Iterable<AutoCloseable>) null);
    }

    @Test
    void throwsTheFirstFailureWithTheLaterOnesSuppressedAfterClosingAll() {
        IllegalStateException first = new IllegalStateException("first");
        IllegalArgumentException second = new IllegalArgumentException("second");
        IllegalStateException third = new IllegalStateException("third");
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> Closer.closeAll(
                ok("a"), failing("b", first), ok("c"), failing("d", second), failing("e", third), ok("f")));
        assertSame(first, thrown);
        assertArrayEquals(new Throwable[] {second, third}, thrown.getSuppressed());
        assertEquals(List.of("a", "b", "c", "d", "e", "f"), closed);
    }

    @Test
    void wrapsACheckedFirstFailure() {
        IOException io = new IOException("disk gone");
        UncheckedIOException u = assertThrows(UncheckedIOException.class,
                () -> Closer.closeAll(failing("a", io), ok("b")));
        assertSame(io, u.getCause());
        Exception other = new Exception("checked");
        IllegalStateException s = assertThrows(IllegalStateException.class,
                () -> Closer.closeAll(failing("c", other)));
        assertSame(other, s.getCause());
        assertEquals(List.of("a", "b", "c"), closed);
    }

    @Test
    void anErrorIsRethrownAsItIs() {
        AssertionError error = new AssertionError("bad");
        AutoCloseable throwsError = () -> {
            throw error;
        };
        assertSame(error, assertThrows(AssertionError.class, () -> Closer.closeAll(throwsError, ok("a"))));
        assertEquals(List.of("a"), closed);
    }

    @Test
    void anErrorHandlerGetsEveryFailureAndNothingIsThrown() {
        IllegalStateException first = new IllegalStateException("first");
        IllegalStateException second = new IllegalStateException("second");
        List<Throwable> seen = new ArrayList<>();
        Closer.closeAll(seen::add, failing("a", first), ok("b"), failing("c", second));
        assertEquals(List.of(first, second), seen);
        assertEquals(0, first.getSuppressed().length);
        assertEquals(List.of("a", "b", "c"), closed);
    }
}

# Shared by ./jmesh and ./test: find a JDK 25, install what a fresh Debian/Ubuntu machine lacks, build when stale.
# Sourced, not run. Every failure says what is missing and how to get it.

JMESH_ROOT=${JMESH_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

jmesh_say() { echo "jmesh: $*" >&2; }
jmesh_die() { echo "jmesh: $*" >&2; exit 2; }

# java_major BIN -> prints the major version of that java, or nothing
jmesh_java_major() {
    "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' | head -1
}

# Sets JAVA_HOME to a JDK 25 or newer: JAVA_HOME, then java on PATH, then /usr/lib/jvm/*.
jmesh_find_jdk() {
    local candidates=() c
    [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
    if command -v java >/dev/null 2>&1; then
        candidates+=("$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")")
    fi
    for c in /usr/lib/jvm/*25* /usr/lib/jvm/*; do [ -d "$c" ] && candidates+=("$c"); done
    for c in "${candidates[@]}"; do
        if [ -x "$c/bin/java" ] && [ -x "$c/bin/javac" ]; then
            local major
            major=$(jmesh_java_major "$c/bin/java")
            if [ -n "$major" ] && [ "$major" -ge 25 ]; then
                export JAVA_HOME=$c
                # Maven's own Guava calls sun.misc.Unsafe, which JDK 24+ warns about; the flag is not ours to fix
                # and only JDK 23+ knows it, so it is set here rather than in .mvn/jvm.config
                case " ${MAVEN_OPTS:-} " in
                    *sun-misc-unsafe-memory-access*) ;;
                    *) export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow" ;;
                esac
                return 0
            fi
        fi
    done
    jmesh_die "jmesh needs a JDK 25 (javac and the FFM API), and none was found: JAVA_HOME is '${JAVA_HOME:-unset}', \
'java' on PATH is $(java -version 2>&1 | head -1 || echo missing), and /usr/lib/jvm has none. Install one (e.g. \
Temurin 25) and set JAVA_HOME to it."
}

# jmesh_apt PACKAGE... : installs the missing ones with apt-get when we are root on Debian/Ubuntu, else says how.
jmesh_apt() {
    local missing=() p
    # without dpkg (Fedora, Arch ...) nothing can be checked here: jmesh itself names what is missing at run time
    command -v dpkg-query >/dev/null 2>&1 || return 0
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        jmesh_say "installing ${missing[*]} (first run on this machine)"
        if [ -z "${JMESH_APT_UPDATED:-}" ]; then
            apt-get update -qq >/dev/null 2>&1 || true
            export JMESH_APT_UPDATED=1
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null &
        jmesh_progress $! "installing ${missing[*]}" /dev/null \
            || jmesh_die "apt-get could not install ${missing[*]}; install them by hand and run again"
    else
        jmesh_die "missing packages: ${missing[*]}; install them (sudo apt-get install ${missing[*]}) and run again"
    fi
}

# jmesh_progress PID WHAT LOG: waits for PID, printing every few seconds how long it has run and the module Maven
# is building (from LOG), so that nothing runs for more than a second without a sign of life; returns PID's status.
jmesh_progress() {
    local pid=$1 what=$2 log=$3 start=$SECONDS line
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        if (( (SECONDS - start) % 5 == 0 )); then
            line=$(grep -a -o 'Building jmesh[^[]*' "$log" 2>/dev/null | tail -1 | sed 's/ *$//')
            if [ -t 2 ]; then
                printf '\rjmesh: %s ... %ds %s\033[K' "$what" $((SECONDS - start)) "${line:+($line)}" >&2
            else
                echo "jmesh: $what ... $((SECONDS - start))s ${line:+($line)}" >&2
            fi
        fi
    done
    [ -t 2 ] && printf '\r\033[K' >&2
    wait "$pid"
}

# Runs Maven quietly with the JDK found above; Maven itself comes from apt when missing.
jmesh_mvn() {
    command -v mvn >/dev/null 2>&1 || jmesh_apt maven
    (cd "$JMESH_ROOT" && mvn -B -q -Dstyle.color=never "$@")
}

# For a benchmark run in the testbed: builds the benchmarks and copies them to target/bench-runs/<stamp>-NAME-classpath,
# which the guests run (a rebuild during a long run cannot change them under it). Sets stamp and exports JMESH_CP.
# With JMESH_BENCH_PREBUILT=1 (testbed/device-run sets it: a machine without Maven) it copies the jars already there.
jmesh_bench_snapshot() {
    if [ "${JMESH_BENCH_PREBUILT:-}" = 1 ]; then
        [ -f "$JMESH_ROOT/benchmarks/target/jmesh-benchmarks.jar" ] \
            || jmesh_die "JMESH_BENCH_PREBUILT=1 but benchmarks/target/jmesh-benchmarks.jar is missing: build it first"
    else
        jmesh_say "building (mvn package) ..."
        jmesh_mvn -o package -pl benchmarks -am -DskipTests || jmesh_die "the build failed"
    fi
    stamp=$(date +%Y%m%d-%H%M%S)
    local snap=$JMESH_ROOT/target/bench-runs/$stamp-$1-classpath
    mkdir -p "$snap" && cp "$JMESH_ROOT/benchmarks/target/jmesh-benchmarks.jar" "$snap/" \
        && cp -r "$JMESH_ROOT/benchmarks/target/lib" "$snap/" || jmesh_die "cannot copy the benchmarks to $snap"
    export JMESH_CP="$snap/jmesh-benchmarks.jar:$snap/lib/*"
}

# The Java of a benchmark's guests: with JMESH_BENCH_PREBUILT=1, JAVA_HOME's runtime as it is (testbed/device-run's
# has no javac, and nothing is built); else a JDK 25 (jmesh_find_jdk), which the build needs.
jmesh_bench_java() {
    if [ "${JMESH_BENCH_PREBUILT:-}" = 1 ] && [ -x "${JAVA_HOME:-}/bin/java" ]; then return 0; fi
    jmesh_find_jdk
}

# jmesh_testbed_link DEV, in a testbed guest: sets dev=DEV, gidx (DEV's GID index, the -x of perftest and jmesh) and
# peer (the address of the guest at the other end of DEV's link) from the TESTBED_DEV_<DEV>_* variables of testbed/run.
jmesh_testbed_link() {
    local v
    dev=$1
    v=TESTBED_DEV_${dev}_GIDX; gidx=${!v}
    v=TESTBED_DEV_${dev}_PEER_IP; peer=${!v}
}

# jmesh_await_relay LOG, in a testbed guest: waits (at most 120 s) until the `jmesh relay` that writes LOG relays. A
# relayed client started before it waits for the relay's route only within its handshake timeout, and a JVM under
# TCG can take longer than that to start (on 2026-11-28, before connects waited at all once 7 s had passed, the first
# relayed `jmesh bw` of scripts/bench relay found no route).
jmesh_await_relay() {
    local i
    for ((i = 0; i < 240; i++)); do grep -q '^jmesh relay: relaying' "$1" 2>/dev/null && return 0; sleep 0.5; done
    echo "jmesh relay did not start within 120 s: $(tail -n 3 "$1" 2>/dev/null)" >&2
    return 1
}

# median(s), the median of the numbers in the space-separated list s ("" for none), for the awk programs that
# summarise a benchmark's rounds: awk "$JMESH_AWK_MEDIAN"' ... median(v[k]) ...'
JMESH_AWK_MEDIAN='function median(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n == 0 ? "" : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) }'

# Builds the jmesh command when its jar is missing or older than any source or pom.
jmesh_build_if_stale() {
    # a stamp, not the jar: Maven keeps an unchanged jar's old time stamp
    local jar=$JMESH_ROOT/benchmarks/target/.jmesh-built
    if [ ! -f "$JMESH_ROOT/benchmarks/target/jmesh-benchmarks.jar" ] || [ ! -f "$jar" ] || [ -n "$(find "$JMESH_ROOT" -path "$JMESH_ROOT/testbed" -prune -o \
            \( -name '*.java' -o -name 'pom.xml' -o -name '*.xml' -o -name '*.properties' \) \
            -newer "$jar" -not -path '*/target/*' -print -quit)" ]; then
        jmesh_say "building (mvn package; the first build on a machine downloads the Maven plugins and takes a few minutes) ..."
        mkdir -p "$JMESH_ROOT/target"
        local log=$JMESH_ROOT/target/build.log
        command -v mvn >/dev/null 2>&1 || jmesh_apt maven
        (cd "$JMESH_ROOT" && mvn -B -Dstyle.color=never package -DskipTests >"$log" 2>&1) &
        jmesh_progress $! "building" "$log" || {
            tail -40 "$log" >&2
            jmesh_die "the build failed (full log: target/build.log)"
        }
        touch "$jar"
    fi
}

# jmesh_jlink_runtime MODULE_PATH OUT [STRIP] [COMPRESS]: the NCCL plugin's bundled Java runtime, linked by this JDK's
# jlink from the jmods in MODULE_PATH (another architecture's of the same feature release), or from this JDK's own
# run-time image when MODULE_PATH is empty, into OUT, with its native libraries stripped by STRIP (default strip;
# aarch64-linux-gnu-strip for an aarch64 runtime). COMPRESS is jlink's --compress (default zip-9; zip-0 for a
# runtime that travels in an xz archive, which packs the uncompressed modules image smaller).
# java.desktop: Log4j Core's LoggerContext needs java.beans; its AWT/font/image/sound libraries are left out, and so
# is the debug information a distribution's jmods carry (*.debuginfo).
jmesh_jlink_runtime() {
    local modules=$1 out=$2 strip=${3:-strip} compress=${4:-zip-9} path=()
    [ -n "$modules" ] && path=(--module-path "$modules")
    rm -rf "$out"
    "$JAVA_HOME/bin/jlink" "${path[@]}" \
        --add-modules java.base,java.desktop,java.logging,java.management,java.naming,java.xml,jdk.unsupported \
        --strip-java-debug-attributes --no-man-pages --no-header-files "--compress=$compress" \
        "--exclude-files=**/*.debuginfo,**/libawt*.so,**/libfontmanager.so,**/libjavajpeg.so,**/liblcms.so,**/libmlib_image.so,**/libsplashscreen.so,**/libjsound.so,**/libfreetype.so,**/libharfbuzz.so" \
        --output "$out" || return 1
    # jlink keeps the native symbol tables (and a distribution's JDK its debug info); without them libjvm.so is small
    if command -v "$strip" >/dev/null 2>&1; then
        find "$out" -name '*.so' -exec "$strip" --strip-unneeded {} \;
    fi
}

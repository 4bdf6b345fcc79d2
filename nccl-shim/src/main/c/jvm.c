/*
 * Starting (or joining) the JVM that runs jmesh inside the process that loaded the plugin, and the one JNI call into
 * it, NcclBootstrap.bootstrap, which fills the bootstrap block with FFM upcall stubs (net.c calls through them). Which
 * Java runtime and which jars was decided when the install layout was built (docs/nccl.md): the file java-home names
 * the runtime, and the manifest of lib/jmesh-nccl-plugin.jar names the other jars.
 *
 * Why the details:
 * - libjvm is dlopen'ed, never linked: the plugin must load in processes that have no Java, and say what it looked at
 *   when there is none.
 * - JNI_CreateJavaVM runs on a thread of its own with a known stack, not on the caller's thread (often Python's main
 *   thread, whose stack and guard pages HotSpot does not control), as the java launcher does.
 * - A JVM cannot be destroyed and created again in one process, and another library may already run one: an existing
 *   JVM is joined (JNI_GetCreatedJavaVMs), and libjvm is opened RTLD_NODELETE so NCCL's dlclose of this plugin never
 *   unloads it under the JVM's own threads.
 * - -Xrs keeps the JVM away from SIGINT/SIGTERM/SIGHUP/SIGQUIT, which belong to the host (Ctrl-C, torchrun).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <jni.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jmesh_shim.h"
#include "nccl_net_abi.h"

#define PATH_BYTES 4096
#define MAX_OPTS 64
#define INFO(...) jm_log(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__, __VA_ARGS__)
#define J(fn, ...) (*env)->fn(env, __VA_ARGS__)
#define J0(fn) (*env)->fn(env)

typedef jint (*create_vm_fn)(JavaVM**, void**, void*);
typedef jint (*created_vms_fn)(JavaVM**, jsize, jsize*);

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { /* the start in progress (under g_lock) */
    jm_boot_t* boot;
    char libdir[PATH_BYTES];
    char classPath[PATH_BYTES];
    int ownRuntime; /* the JVM comes from the runtime the layout records (java-home), the one its AOT cache fits */
    char* why; /* why it failed, for NCCL's log */
    size_t whyLen;
    int rc;
} s;

static void why(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void why(const char* fmt, ...) {
    size_t used = strnlen(s.why, s.whyLen);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s.why + used, s.whyLen - used, fmt, ap);
    va_end(ap);
}

#define FAIL(...) (s.why[0] = '\0', why(__VA_ARGS__), ncclSystemError)

/* Why <home> is not a usable Java 25+ runtime (the end of a why entry), or NULL; its libjvm.so goes into lib. */
static const char* unusable(const char* home, char* lib, size_t len) {
    static char reason[64];
    char path[PATH_BYTES + 16], line[512];
    int version = 0;
    snprintf(lib, len, "%s/lib/server/libjvm.so", home);
    snprintf(path, sizeof path, "%s/release", home);
    FILE* f = fopen(path, "r");
    while (f != NULL && version == 0 && fgets(line, sizeof line, f)) {
        if (strncmp(line, "JAVA_VERSION=\"", 14) == 0) { /* "25.0.1", or "1.8.0" before Java 9 */
            version = strncmp(line + 14, "1.", 2) == 0 ? atoi(line + 16) : atoi(line + 14);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    snprintf(reason, sizeof reason, "Java %d, jmesh needs 25 or newer]", version);
    return access(lib, R_OK) != 0 ? "no lib/server/libjvm.so]" : version != 0 && version < 25 ? reason : NULL;
}

/*
 * libjvm.so of the first usable Java 25+ home: JMESH_JAVA_HOME (when set, the only one tried), JAVA_HOME, then the
 * one the layout records in java-home (a path relative to the library unless absolute).
 */
static void* open_libjvm(void) {
    char file[PATH_BYTES + 16], line[PATH_BYTES] = "", recorded[2 * PATH_BYTES + 2], lib[2 * PATH_BYTES + 32];
    snprintf(file, sizeof file, "%s/java-home", s.libdir);
    FILE* f = fopen(file, "r");
    if (f != NULL && fgets(line, sizeof line, f) == NULL) {
        line[0] = '\0';
    }
    if (f != NULL) {
        fclose(f);
    }
    line[strcspn(line, "\r\n")] = '\0';
    snprintf(recorded, sizeof recorded, "%s%s%s", line[0] && line[0] != '/' ? s.libdir : "",
             line[0] && line[0] != '/' ? "/" : "", line);
    const char* labels[] = {"JMESH_JAVA_HOME", "JAVA_HOME", file};
    const char* homes[] = {getenv("JMESH_JAVA_HOME"), getenv("JAVA_HOME"), recorded};
    why("no usable Java 25+ runtime for the jmesh NCCL plugin; looked at:");
    for (int i = 0; i < 3; i++) {
        if (homes[i] == NULL || homes[i][0] == '\0') {
            why(" [%s: %s]", labels[i], i < 2 ? "unset" : "absent");
            continue;
        }
        why(" [%s=%s: ", labels[i], homes[i]);
        const char* wrong = unusable(homes[i], lib, sizeof lib);
        void* h = wrong ? NULL : dlopen(lib, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
        if (h != NULL) {
            char* a = realpath(homes[i], NULL);
            char* b = realpath(recorded, NULL);
            s.ownRuntime = a != NULL && b != NULL && strcmp(a, b) == 0;
            free(a);
            free(b);
            s.why[0] = '\0';
            INFO("jmesh: JVM library %s (from %s)", lib, labels[i]);
            return h;
        }
        wrong ? why("%s", wrong) : why("dlopen failed: %s]", dlerror());
        if (i == 0) {
            break; /* set but unusable: not silently replaced by another runtime */
        }
    }
    why(". Fix: set JMESH_JAVA_HOME to a Java 25+ runtime (a JDK, or the jlink'd runtime of docs/nccl.md), e.g. "
        "JMESH_JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64");
    return NULL;
}

/*
 * Runs NcclBootstrap.bootstrap on this thread. The class comes from the JVM's class path or, in a JVM that someone
 * else started without jmesh on it, from the layout's jar through a class loader of its own (parent: the system one).
 */
static int call_bootstrap(JNIEnv* env) {
    J(PushLocalFrame, 32); /* this thread may stay attached: free the references made here */
    jclass c = J(FindClass, "io/jmesh/nccl/NcclBootstrap");
    if (c == NULL) {
        J0(ExceptionClear);
        jclass fileC = J(FindClass, "java/io/File"), uriC = J(FindClass, "java/net/URI");
        jclass urlC = J(FindClass, "java/net/URL"), loaderC = J(FindClass, "java/net/URLClassLoader");
        jobject file = J(NewObject, fileC, J(GetMethodID, fileC, "<init>", "(Ljava/lang/String;)V"),
                         J(NewStringUTF, s.classPath));
        jobject uri = J(CallObjectMethod, file, J(GetMethodID, fileC, "toURI", "()Ljava/net/URI;"));
        jobject url = J(CallObjectMethod, uri, J(GetMethodID, uriC, "toURL", "()Ljava/net/URL;"));
        jobject loader = J0(ExceptionCheck) ? NULL : J(NewObject, loaderC, J(GetMethodID, loaderC, "<init>",
                                                      "([Ljava/net/URL;)V"), J(NewObjectArray, 1, urlC, url));
        jmethodID load = J(GetMethodID, loaderC, "loadClass", "(Ljava/lang/String;)Ljava/lang/Class;");
        c = loader ? J(CallObjectMethod, loader, load, J(NewStringUTF, "io.jmesh.nccl.NcclBootstrap")) : NULL;
    }
    jmethodID m = c && !J0(ExceptionCheck) ? J(GetStaticMethodID, c, "bootstrap", "(J)I") : NULL;
    jint rc = m ? J(CallStaticIntMethod, c, m, (jlong)(uintptr_t)s.boot) : ncclSystemError;
    jboolean threw = J0(ExceptionCheck);
    if (threw) {
        J0(ExceptionDescribe);
        J0(ExceptionClear);
    }
    if (c == NULL) {
        rc = FAIL("io.jmesh.nccl.NcclBootstrap is not in the running JVM nor in %s", s.classPath);
    } else if (m == NULL) {
        rc = FAIL("io.jmesh.nccl.NcclBootstrap has no bootstrap(long): the jars do not match this library; "
                  "reinstall the plugin from one build");
    } else if (threw) {
        rc = FAIL("the Java bootstrap threw (stack trace on stderr)");
    } else if (rc != 0) {
        (void)FAIL("%s", s.boot->error[0] ? s.boot->error : "the Java bootstrap failed");
    }
    J(PopLocalFrame, NULL);
    return rc;
}

static void* create_thread_main(void* args) {
    static const char* errors[] = {"", "JNI_ERR", "JNI_EDETACHED", "JNI_EVERSION", "JNI_ENOMEM (not enough memory "
                                   "for the heap: lower -Xmx in JMESH_JVM_OPTS)", "JNI_EEXIST (a JVM already exists)",
                                   "JNI_EINVAL (an option was not accepted: check JMESH_JVM_OPTS)"};
    create_vm_fn create = (create_vm_fn)dlsym(RTLD_DEFAULT, "JNI_CreateJavaVM");
    JavaVM* vm = NULL;
    JNIEnv* env = NULL;
    jint rc = create == NULL ? JNI_ERR : create(&vm, (void**)&env, args);
    if (rc != JNI_OK) {
        s.rc = FAIL("JNI_CreateJavaVM failed: %d %s", (int)rc, rc < 0 && rc >= -6 ? errors[-rc] : "unknown");
        return NULL;
    }
    s.rc = call_bootstrap(env);
    (*vm)->DetachCurrentThread(vm); /* NCCL's threads attach themselves on their first upcall */
    return NULL;
}

/*
 * The layout's AOT cache (lib/jmesh.aot, built by scripts/nccl-aot.sh for the layout's runtime): the classes of
 * jmesh, Log4j and the JDK parsed, linked and profiled by a training run, so the JVM starts in about half the time.
 * Used only with the runtime it was built for and when the user's options choose no AOT mode of their own. The JVM's
 * own messages about a cache that no longer fits are silenced: the Java side tells whether it was used, and how to
 * rebuild it when not.
 */
static int aot_options(const char* user, JavaVMOption* opts) {
    static char cacheOption[PATH_BYTES + 32], cacheProperty[PATH_BYTES + 32];
    char cache[PATH_BYTES + 16];
    snprintf(cache, sizeof cache, "%s/lib/jmesh.aot", s.libdir);
    if (!s.ownRuntime || strstr(user, "-XX:AOT") != NULL || access(cache, R_OK) != 0) {
        INFO("jmesh: no AOT cache: %s", strstr(user, "-XX:AOT") ? "JMESH_JVM_OPTS sets an AOT option" :
             !s.ownRuntime ? "the JVM is not the layout's runtime (JMESH_JAVA_HOME or JAVA_HOME chose another)" :
             "lib/jmesh.aot is missing (scripts/nccl-aot.sh builds it)");
        return 0;
    }
    snprintf(cacheOption, sizeof cacheOption, "-XX:AOTCache=%s", cache);
    snprintf(cacheProperty, sizeof cacheProperty, "-Djmesh.nccl.aot=%s", cache);
    opts[0].optionString = cacheOption;
    opts[1].optionString = cacheProperty;
    opts[2].optionString = "-Xlog:aot*=off";
    opts[3].optionString = "-Xlog:class+path=off";
    return 4;
}

/* Creates the JVM, with the defaults of docs/nccl.md and then JMESH_JVM_OPTS split on blanks, and bootstraps it. */
static int create_vm(void) {
    static char cpOption[PATH_BYTES + 32], homeOption[PATH_BYTES + 32], user[8192];
    snprintf(cpOption, sizeof cpOption, "-Djava.class.path=%s", s.classPath);
    snprintf(homeOption, sizeof homeOption, "-Djmesh.nccl.home=%s", s.libdir);
    snprintf(user, sizeof user, "%s", getenv("JMESH_JVM_OPTS") ? getenv("JMESH_JVM_OPTS") : "");
    /* jmesh's own methods compile at a tenth of the JIT's invocation thresholds. NCCL calls the data path
     * once per message, so at the default thresholds (C2 after 5,000 calls, later while C2 is busy) a slow machine
     * runs it as profiled C1 code, and compiles it, for its first several thousand messages: on the testbed, minutes
     * (docs/benchmarks-plugin.md). "quiet" keeps the JVM from echoing the command on the application's stdout.
     * sun.nio.ch hands the TCP relay its sockets' descriptors, so that it splices relayed bytes in the kernel. */
    char* defaults[] = {cpOption, homeOption, "-Xrs", "--enable-native-access=ALL-UNNAMED",
                        "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED", "-XX:+UseSerialGC",
                        "-Xmx1g", "-XX:+PerfDisableSharedMem" /* no hsperfdata file per rank in /tmp */,
                        "-XX:CompileCommand=quiet", "-XX:CompileCommand=CompileThresholdScaling,io.jmesh.*::*,0.1"};
    JavaVMOption opts[MAX_OPTS] = {{0}};
    int n = 0;
    for (; n < (int)(sizeof defaults / sizeof defaults[0]); n++) {
        opts[n].optionString = defaults[n];
    }
    n += aot_options(user, opts + n);
    char* save = NULL;
    for (char* t = strtok_r(user, " \t\n", &save); t && n < MAX_OPTS; t = strtok_r(NULL, " \t\n", &save)) {
        opts[n++].optionString = t;
    }
    JavaVMInitArgs args = {JNI_VERSION_21, n, opts, JNI_FALSE};
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8u << 20);
    int err = pthread_create(&thread, &attr, create_thread_main, &args);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        return FAIL("cannot start the thread that creates the JVM: %s", strerror(err));
    }
    pthread_join(thread, NULL);
    if (s.rc == ncclSuccess) {
        INFO("jmesh: started a JVM (%d options)", n);
    }
    return s.rc;
}

/* Joins the JVM already in this process (ours from an earlier load of the plugin, or the host's). */
static int join_vm(JavaVM* vm) {
    JNIEnv* env = NULL;
    int attached = (*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_21) == JNI_EDETACHED;
    if (attached && (*vm)->AttachCurrentThreadAsDaemon(vm, (void**)&env, NULL) != JNI_OK) {
        return FAIL("cannot attach to the JVM already running in this process");
    }
    INFO("jmesh: joining the JVM already in this process");
    int rc = call_bootstrap(env);
    if (attached) {
        (*vm)->DetachCurrentThread(vm);
    }
    return rc;
}

static int start_locked(void) {
    Dl_info info;
    if (dladdr((void*)&start_locked, &info) == 0 || info.dli_fname == NULL) {
        return FAIL("cannot tell where libnccl-net-jmesh.so was loaded from (dladdr failed)");
    }
    char* dir = realpath(info.dli_fname, NULL);
    snprintf(s.libdir, sizeof s.libdir, "%s", dir ? dir : info.dli_fname);
    free(dir);
    *(strrchr(s.libdir, '/') ? strrchr(s.libdir, '/') : s.libdir) = '\0'; /* realpath's answer has a slash */
    const char* forced = getenv("JMESH_CLASSPATH");
    if (forced && forced[0]) {
        snprintf(s.classPath, sizeof s.classPath, "%s", forced);
    } else if (snprintf(s.classPath, sizeof s.classPath, "%s/lib/jmesh-nccl-plugin.jar", s.libdir) > 0 &&
               access(s.classPath, R_OK) != 0) {
        return FAIL("the jmesh NCCL plugin's jars are missing: cannot read %s (%s); the library must sit next to its "
                    "lib/ folder as built in nccl-shim/target/nccl-plugin (or set JMESH_CLASSPATH)", s.classPath,
                    strerror(errno));
    }
    /* libjvm is in the process already when a JVM runs (ours from an earlier load of the plugin, or the host's) */
    if (dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs") == NULL && open_libjvm() == NULL) {
        return ncclSystemError;
    }
    created_vms_fn created = (created_vms_fn)dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs"); /* libjvm is global */
    JavaVM* vm = NULL;
    jsize count = 0;
    if (created == NULL) {
        return FAIL("the JVM library has no JNI_GetCreatedJavaVMs: %s", dlerror());
    }
    return created(&vm, 1, &count) == JNI_OK && count > 0 ? join_vm(vm) : create_vm();
}

int jm_java_start(jm_boot_t* boot, char* whyOut, size_t whyLen) {
    pthread_mutex_lock(&g_lock);
    memset(&s, 0, sizeof s);
    s.boot = boot;
    s.why = whyOut;
    s.whyLen = whyLen;
    s.why[0] = '\0';
    int rc = start_locked();
    pthread_mutex_unlock(&g_lock);
    return rc;
}

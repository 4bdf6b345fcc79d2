/*
 * Starting (or joining) the JVM that runs jmesh inside the process that loaded the plugin, and the one JNI call that
 * hands the Java adapter its bootstrap block. Everything after that goes through FFM upcall stubs (net.c).
 *
 * Why the details:
 * - libjvm is dlopen'ed, never linked: the plugin must load in processes that have no Java, and report which
 *   variables it looked at when there is none.
 * - JNI_CreateJavaVM runs on a thread of its own with a known stack, not on the caller's thread (often Python's main
 *   thread, whose stack and guard pages HotSpot does not control), as the java launcher does.
 * - A JVM cannot be destroyed and created again in one process, and another library may already run one: an existing
 *   JVM is joined (JNI_GetCreatedJavaVMs), and libjvm is opened RTLD_NODELETE so NCCL's dlclose of this plugin never
 *   unloads it under the JVM's own threads.
 * - -Xrs keeps the JVM away from SIGINT/SIGTERM/SIGHUP/SIGQUIT, which belong to the host (Ctrl-C, torchrun).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <jni.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jmesh_shim.h"
#include "nccl_net_abi.h"

#define MAX_OPTS 64
#define PATH_BYTES 4096

typedef jint (*create_vm_fn)(JavaVM**, void**, void*);
typedef jint (*created_vms_fn)(JavaVM**, jsize, jsize*);

static JavaVM* g_vm;
static jclass g_bootstrap_class; /* global ref */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void append(char* buf, size_t len, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char* buf, size_t len, const char* fmt, ...) {
    size_t used = strnlen(buf, len);
    if (used + 1 >= len) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

/* The folder this library was loaded from (the install layout's root). */
static int library_dir(char* out, size_t len) {
    Dl_info info;
    if (dladdr((void*)&library_dir, &info) == 0 || info.dli_fname == NULL) {
        return -1;
    }
    char resolved[PATH_BYTES];
    const char* path = realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
    snprintf(out, len, "%s", path);
    char* slash = strrchr(out, '/');
    if (slash == NULL) {
        snprintf(out, len, ".");
    } else {
        *slash = '\0';
    }
    return 0;
}

static int is_file(const char* path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The feature version from <home>/release (JAVA_VERSION="25.0.1"), 0 when unknown. */
static int java_feature_version(const char* home) {
    char path[PATH_BYTES];
    snprintf(path, sizeof path, "%s/release", home);
    FILE* f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    char line[512];
    int version = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "JAVA_VERSION=\"", 14) == 0) {
            version = atoi(line + 14);
            if (version == 1) { /* 1.8 style */
                version = atoi(line + 16);
            }
            break;
        }
    }
    fclose(f);
    return version;
}

static int read_first_line(const char* path, char* out, size_t len) {
    FILE* f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    int ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    if (!ok) {
        return -1;
    }
    out[strcspn(out, "\r\n")] = '\0';
    return out[0] ? 0 : -1;
}

/*
 * Opens libjvm.so from the first usable Java home: JMESH_JAVA_HOME, JAVA_HOME, the path recorded at build time
 * (<libdir>/java-home), a runtime bundled next to the library (<libdir>/jre). Writes what it tried into why.
 */
static void* open_libjvm(const char* libdir, char* why, size_t whyLen) {
    char recorded[PATH_BYTES] = "";
    char recordedFile[PATH_BYTES];
    snprintf(recordedFile, sizeof recordedFile, "%s/java-home", libdir);
    read_first_line(recordedFile, recorded, sizeof recorded);
    char bundled[PATH_BYTES];
    snprintf(bundled, sizeof bundled, "%s/jre", libdir);

    struct {
        const char* label;
        const char* home;
        int explicit_;
    } candidates[] = {
        {"JMESH_JAVA_HOME", getenv("JMESH_JAVA_HOME"), 1},
        {"JAVA_HOME", getenv("JAVA_HOME"), 0},
        {"the Java home recorded at build time", recorded[0] ? recorded : NULL, 0},
        {"the runtime bundled next to the library", bundled, 0},
    };
    append(why, whyLen, "no usable Java 25+ runtime for the jmesh NCCL plugin; looked at:");
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        const char* home = candidates[i].home;
        if (i == 2) {
            append(why, whyLen, " [%s (%s): %s", candidates[i].label, recordedFile, home ? home : "absent]");
        } else if (home == NULL || home[0] == '\0') {
            append(why, whyLen, " [%s: unset]", candidates[i].label);
            continue;
        } else {
            append(why, whyLen, " [%s=%s", candidates[i].label, home);
        }
        if (home == NULL) {
            continue;
        }
        char lib[PATH_BYTES];
        snprintf(lib, sizeof lib, "%s/lib/server/libjvm.so", home);
        if (!is_file(lib)) {
            append(why, whyLen, ": no lib/server/libjvm.so]");
            if (candidates[i].explicit_) {
                break;
            }
            continue;
        }
        int version = java_feature_version(home);
        if (version != 0 && version < 25) {
            append(why, whyLen, ": Java %d, jmesh needs 25 or newer]", version);
            if (candidates[i].explicit_) {
                break;
            }
            continue;
        }
        void* h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
        if (h == NULL) {
            append(why, whyLen, ": dlopen failed: %s]", dlerror());
            if (candidates[i].explicit_) {
                break;
            }
            continue;
        }
        why[0] = '\0';
        jm_log(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__, "jmesh: JVM library %s (from %s)", lib,
               candidates[i].label);
        return h;
    }
    append(why, whyLen, ". Fix: set JMESH_JAVA_HOME to a Java 25+ runtime (a JDK, or the jlink'd runtime of "
                        "docs/nccl.md), e.g. JMESH_JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64");
    return NULL;
}

/* "<libdir>/lib/a.jar:<libdir>/lib/b.jar" (sorted), or JMESH_CLASSPATH when set. */
static int class_path(const char* libdir, char* out, size_t len, char* why, size_t whyLen) {
    const char* forced = getenv("JMESH_CLASSPATH");
    if (forced && forced[0]) {
        snprintf(out, len, "%s", forced);
        return 0;
    }
    char dir[PATH_BYTES];
    snprintf(dir, sizeof dir, "%s/lib", libdir);
    struct dirent** names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        snprintf(why, whyLen, "the jmesh NCCL plugin's jars are missing: cannot read %s (%s); the library must sit "
                              "next to its lib/ folder as built in nccl-shim/target/nccl-plugin (or set "
                              "JMESH_CLASSPATH)", dir, strerror(errno));
        return -1;
    }
    out[0] = '\0';
    int jars = 0;
    for (int i = 0; i < n; i++) {
        const char* name = names[i]->d_name;
        size_t l = strlen(name);
        if (l > 4 && strcmp(name + l - 4, ".jar") == 0) {
            append(out, len, "%s%s/%s", jars ? ":" : "", dir, name);
            jars++;
        }
        free(names[i]);
    }
    free(names);
    if (jars == 0) {
        snprintf(why, whyLen, "the jmesh NCCL plugin's jars are missing: %s has no .jar files; rebuild the plugin "
                              "(mvn package -pl nccl-shim -am) or set JMESH_CLASSPATH", dir);
        return -1;
    }
    return 0;
}

/* Finds NcclBootstrap through the system class loader, or (in a JVM someone else started) a URLClassLoader. */
static jclass find_bootstrap(JNIEnv* env, const char* cp, char* why, size_t whyLen) {
    jclass c = (*env)->FindClass(env, "io/jmesh/nccl/NcclBootstrap");
    if (c != NULL) {
        return c;
    }
    (*env)->ExceptionClear(env);
    /* new URLClassLoader(urls) where urls = each class path entry as file URL */
    jclass fileCls = (*env)->FindClass(env, "java/io/File");
    jclass uriCls = (*env)->FindClass(env, "java/net/URI");
    jclass urlCls = (*env)->FindClass(env, "java/net/URL");
    jclass loaderCls = (*env)->FindClass(env, "java/net/URLClassLoader");
    if (!fileCls || !uriCls || !urlCls || !loaderCls) {
        (*env)->ExceptionClear(env);
        snprintf(why, whyLen, "cannot reach java.net.URLClassLoader in the running JVM");
        return NULL;
    }
    jmethodID fileInit = (*env)->GetMethodID(env, fileCls, "<init>", "(Ljava/lang/String;)V");
    jmethodID toUri = (*env)->GetMethodID(env, fileCls, "toURI", "()Ljava/net/URI;");
    jmethodID toUrl = (*env)->GetMethodID(env, uriCls, "toURL", "()Ljava/net/URL;");
    jmethodID loaderInit = (*env)->GetMethodID(env, loaderCls, "<init>", "([Ljava/net/URL;)V");
    jmethodID loadClass = (*env)->GetMethodID(env, loaderCls, "loadClass", "(Ljava/lang/String;)Ljava/lang/Class;");
    int count = 1;
    for (const char* p = cp; *p; p++) {
        count += *p == ':';
    }
    jobjectArray urls = (*env)->NewObjectArray(env, count, urlCls, NULL);
    char* copy = strdup(cp);
    char* save = NULL;
    int i = 0;
    for (char* tok = strtok_r(copy, ":", &save); tok && i < count; tok = strtok_r(NULL, ":", &save), i++) {
        jstring s = (*env)->NewStringUTF(env, tok);
        jobject f = (*env)->NewObject(env, fileCls, fileInit, s);
        jobject uri = f ? (*env)->CallObjectMethod(env, f, toUri) : NULL;
        jobject url = uri ? (*env)->CallObjectMethod(env, uri, toUrl) : NULL;
        (*env)->SetObjectArrayElement(env, urls, i, url);
    }
    free(copy);
    jobject loader = (*env)->NewObject(env, loaderCls, loaderInit, urls);
    jstring name = (*env)->NewStringUTF(env, "io.jmesh.nccl.NcclBootstrap");
    jobject cls = loader ? (*env)->CallObjectMethod(env, loader, loadClass, name) : NULL;
    if (cls == NULL || (*env)->ExceptionCheck(env)) {
        (*env)->ExceptionDescribe(env);
        (*env)->ExceptionClear(env);
        snprintf(why, whyLen, "io.jmesh.nccl.NcclBootstrap is not in the running JVM nor in %s", cp);
        return NULL;
    }
    return (jclass)cls;
}

static int call_bootstrap(JNIEnv* env, jm_boot_t* boot, const char* cp, char* why, size_t whyLen) {
    if (g_bootstrap_class == NULL) {
        jclass c = find_bootstrap(env, cp, why, whyLen);
        if (c == NULL) {
            return ncclSystemError;
        }
        g_bootstrap_class = (jclass)(*env)->NewGlobalRef(env, c);
    }
    jmethodID m = (*env)->GetStaticMethodID(env, g_bootstrap_class, "bootstrap", "(J)I");
    if (m == NULL) {
        (*env)->ExceptionClear(env);
        snprintf(why, whyLen, "io.jmesh.nccl.NcclBootstrap has no bootstrap(long): the jars do not match this "
                              "library; reinstall the plugin from one build");
        return ncclSystemError;
    }
    jint rc = (*env)->CallStaticIntMethod(env, g_bootstrap_class, m, (jlong)(uintptr_t)boot);
    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionDescribe(env);
        (*env)->ExceptionClear(env);
        snprintf(why, whyLen, "the Java bootstrap threw (stack trace on stderr)");
        return ncclSystemError;
    }
    if (rc != 0) {
        snprintf(why, whyLen, "%s", boot->error[0] ? boot->error : "the Java bootstrap failed");
        return rc;
    }
    return ncclSuccess;
}

typedef struct {
    create_vm_fn create;
    JavaVMInitArgs* args;
    jm_boot_t* boot;
    const char* cp;
    char* why;
    size_t whyLen;
    int rc;
} create_job_t;

static const char* jni_error_name(jint rc) {
    switch (rc) {
        case JNI_ERR: return "JNI_ERR";
        case JNI_EDETACHED: return "JNI_EDETACHED";
        case JNI_EVERSION: return "JNI_EVERSION";
        case JNI_ENOMEM: return "JNI_ENOMEM (not enough memory for the heap: lower -Xmx in JMESH_JVM_OPTS)";
        case JNI_EEXIST: return "JNI_EEXIST (a JVM already exists)";
        case JNI_EINVAL: return "JNI_EINVAL (an option was not accepted: check JMESH_JVM_OPTS)";
        default: return "unknown";
    }
}

static void* create_thread_main(void* arg) {
    create_job_t* job = arg;
    JNIEnv* env = NULL;
    jint rc = job->create(&g_vm, (void**)&env, job->args);
    if (rc != JNI_OK) {
        g_vm = NULL;
        snprintf(job->why, job->whyLen, "JNI_CreateJavaVM failed: %d %s", (int)rc, jni_error_name(rc));
        job->rc = ncclSystemError;
        return NULL;
    }
    job->rc = call_bootstrap(env, job->boot, job->cp, job->why, job->whyLen);
    /* This thread ends here; NCCL's threads attach themselves on their first upcall. */
    (*g_vm)->DetachCurrentThread(g_vm);
    return NULL;
}

/* Splits JMESH_JVM_OPTS on blanks into opts (copies kept in storage). */
static int user_options(JavaVMOption* opts, int max, char* storage, size_t len) {
    const char* env = getenv("JMESH_JVM_OPTS");
    if (env == NULL) {
        return 0;
    }
    snprintf(storage, len, "%s", env);
    int n = 0;
    char* save = NULL;
    for (char* tok = strtok_r(storage, " \t\n", &save); tok && n < max; tok = strtok_r(NULL, " \t\n", &save)) {
        opts[n++].optionString = tok;
    }
    return n;
}

static int join_existing(created_vms_fn created, jm_boot_t* boot, const char* cp, char* why, size_t whyLen,
                         int* joined) {
    JavaVM* vms[1];
    jsize n = 0;
    *joined = 0;
    if (created(vms, 1, &n) != JNI_OK || n < 1) {
        return ncclSuccess;
    }
    *joined = 1;
    g_vm = vms[0];
    JNIEnv* env = NULL;
    int attached = 0;
    if ((*g_vm)->GetEnv(g_vm, (void**)&env, JNI_VERSION_21) == JNI_EDETACHED) {
        if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void**)&env, NULL) != JNI_OK) {
            snprintf(why, whyLen, "cannot attach to the JVM already running in this process");
            return ncclSystemError;
        }
        attached = 1;
    }
    jm_log(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__, "jmesh: joining the JVM already in this process");
    int rc = call_bootstrap(env, boot, cp, why, whyLen);
    if (attached) {
        (*g_vm)->DetachCurrentThread(g_vm);
    }
    return rc;
}

int jm_java_start(jm_boot_t* boot, char* why, size_t whyLen) {
    pthread_mutex_lock(&g_lock);
    why[0] = '\0';
    char libdir[PATH_BYTES];
    if (library_dir(libdir, sizeof libdir) != 0) {
        snprintf(why, whyLen, "cannot tell where libnccl-net-jmesh.so was loaded from (dladdr failed)");
        pthread_mutex_unlock(&g_lock);
        return ncclSystemError;
    }
    static char cp[64 * 1024];
    if (class_path(libdir, cp, sizeof cp, why, whyLen) != 0) {
        pthread_mutex_unlock(&g_lock);
        return ncclSystemError;
    }
    /* A JVM in this process already (ours from an earlier load of the plugin, or the host's)? */
    created_vms_fn created = (created_vms_fn)dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs");
    create_vm_fn create = (create_vm_fn)dlsym(RTLD_DEFAULT, "JNI_CreateJavaVM");
    if (created == NULL) {
        void* jvm = open_libjvm(libdir, why, whyLen);
        if (jvm == NULL) {
            pthread_mutex_unlock(&g_lock);
            return ncclSystemError;
        }
        created = (created_vms_fn)dlsym(jvm, "JNI_GetCreatedJavaVMs");
        create = (create_vm_fn)dlsym(jvm, "JNI_CreateJavaVM");
        if (created == NULL || create == NULL) {
            snprintf(why, whyLen, "the JVM library has no JNI_CreateJavaVM/JNI_GetCreatedJavaVMs: %s", dlerror());
            pthread_mutex_unlock(&g_lock);
            return ncclSystemError;
        }
    }
    int joined = 0;
    int rc = join_existing(created, boot, cp, why, whyLen, &joined);
    if (joined) {
        pthread_mutex_unlock(&g_lock);
        return rc;
    }
    if (create == NULL) {
        snprintf(why, whyLen, "the JVM library in this process has no JNI_CreateJavaVM");
        pthread_mutex_unlock(&g_lock);
        return ncclSystemError;
    }

    static char cpOption[sizeof cp + 32];
    snprintf(cpOption, sizeof cpOption, "-Djava.class.path=%s", cp);
    static char libOption[PATH_BYTES + 32];
    snprintf(libOption, sizeof libOption, "-Djmesh.nccl.home=%s", libdir);
    static char userStorage[8192];
    JavaVMOption opts[MAX_OPTS];
    memset(opts, 0, sizeof opts);
    int n = 0;
    opts[n++].optionString = cpOption;
    opts[n++].optionString = libOption;
    opts[n++].optionString = "-Xrs";
    opts[n++].optionString = "--enable-native-access=ALL-UNNAMED";
    opts[n++].optionString = "-XX:+UseSerialGC";
    opts[n++].optionString = "-Xmx1g";
    opts[n++].optionString = "-XX:+PerfDisableSharedMem"; /* no hsperfdata file per rank in /tmp */
    n += user_options(opts + n, MAX_OPTS - n, userStorage, sizeof userStorage);

    JavaVMInitArgs args;
    memset(&args, 0, sizeof args);
    args.version = JNI_VERSION_21;
    args.nOptions = n;
    args.options = opts;
    args.ignoreUnrecognized = JNI_FALSE;

    create_job_t job = {create, &args, boot, cp, why, whyLen, ncclSystemError};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8u << 20);
    pthread_t t;
    int err = pthread_create(&t, &attr, create_thread_main, &job);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        snprintf(why, whyLen, "cannot start the thread that creates the JVM: %s", strerror(err));
        pthread_mutex_unlock(&g_lock);
        return ncclSystemError;
    }
    pthread_join(t, NULL);
    if (job.rc == ncclSuccess) {
        jm_log(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__, "jmesh: started a JVM (%d options)", n);
    }
    pthread_mutex_unlock(&g_lock);
    return job.rc;
}

void jm_java_release(void) {
    pthread_mutex_lock(&g_lock);
    if (g_vm != NULL && g_bootstrap_class != NULL) {
        JNIEnv* env = NULL;
        int attached = 0;
        if ((*g_vm)->GetEnv(g_vm, (void**)&env, JNI_VERSION_21) == JNI_EDETACHED) {
            if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void**)&env, NULL) != JNI_OK) {
                pthread_mutex_unlock(&g_lock);
                return;
            }
            attached = 1;
        }
        jmethodID m = (*env)->GetStaticMethodID(env, g_bootstrap_class, "release", "()V");
        if (m != NULL) {
            (*env)->CallStaticVoidMethod(env, g_bootstrap_class, m);
        }
        if ((*env)->ExceptionCheck(env)) {
            (*env)->ExceptionDescribe(env);
            (*env)->ExceptionClear(env);
        }
        (*env)->DeleteGlobalRef(env, g_bootstrap_class);
        g_bootstrap_class = NULL;
        if (attached) {
            (*g_vm)->DetachCurrentThread(g_vm);
        }
    }
    pthread_mutex_unlock(&g_lock);
}

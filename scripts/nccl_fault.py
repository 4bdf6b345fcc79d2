#!/usr/bin/env python3
"""A rank frozen or killed in the middle of NCCL all_reduces: how long every other rank takes to get an NCCL error
and which cause it names, whether ncclCommAbort then returns promptly, and whether a new communicator in the same
process works afterwards and leaves nothing behind (NCCL's fault-tolerant restart: abort, re-init, go on). Run by
scripts/nccl-fault.sh, one case at a time:

    python3 scripts/nccl_fault.py drive --case j4-ring-kill --nranks 4 --victim 2 --fault kill --out DIR \
        [--placement 'A;B;C;D'] [--relay ADDRS --relay-cp CP --java JAVA] [--cap-s 25]
    python3 scripts/nccl_fault.py summary --out DIR          (the table of every case's DIR/<case>.json)

NCCL is driven through ctypes, as inference engines drive it (vLLM's pynccl): no torch.distributed, so nothing but
NCCL and the network plugin decides when an error surfaces (PyTorch's watchdog would abort on its own clock). Each
rank is a process of its own and, through NCCL_HOSTID, a node of its own. Generation 0: every rank loops checked
all_reduces (4 KiB, 64 KiB, 1 MiB) on its own stream, polling cudaStreamQuery and ncclCommGetAsyncError; once all
are warm the driver freezes (SIGSTOP) or kills (SIGKILL) the victim: a rank, or the `jmesh relay` process a relayed
placement needs (--victim relay). Each survivor records when its ncclCommGetAsyncError turned to an error (or that
none came within --cap-s), ncclGetLastError's text, and how long ncclCommAbort took. The driver then kills what is
left of the victim and starts a replacement (a new rank process, or a new relay); survivors and replacement, the same
ranks, then make --gens new communicators one after another, each running --ops checked all_reduces before its
ncclCommDestroy (NCCL's fault-tolerant restart: abort, init again, go on, in the same process). Each survivor counts
its threads (and their names), descriptors, sockets and RSS while generation 0 runs, after its abort, while each
later communicator runs and after each destroy: what a communicator leaves behind shows as growth from one destroy to
the next. Times are CLOCK_REALTIME of one host, the fault's taken right after kill() returns.
"""
import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time

NCCL_FLOAT32, NCCL_SUM = 7, 0
NCCL_SUCCESS, NCCL_IN_PROGRESS = 0, 7
SIZES = [1024, 16 * 1024, 256 * 1024]  # float32 elements: 4 KiB, 64 KiB, 1 MiB


def emit(**event):
    print(json.dumps(event), flush=True)


def resources():
    """This process's threads, descriptors, sockets among them, and resident memory in KiB."""
    fds = os.listdir("/proc/self/fd")
    sockets = 0
    for fd in fds:
        try:
            sockets += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass  # the descriptor listdir itself used, closed since
    rss = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return {"threads": len(os.listdir("/proc/self/task")), "fds": len(fds), "sockets": sockets, "rss_kb": rss}


def thread_names():
    """Each thread's name and how many have it: what a count that grew is made of."""
    names = {}
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue  # ended meanwhile
        names[name] = names.get(name, 0) + 1
    return names


def wait_file(path, timeout_s):
    end = time.time() + timeout_s
    while not os.path.exists(path):
        if time.time() > end:
            raise SystemExit(f"{path} did not appear within {timeout_s} s")
        time.sleep(0.01)
    with open(path, "rb") as f:
        return f.read()


def write_atomic(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


class Nccl:
    """The few NCCL calls this needs, from the libnccl the process's torch loaded (one NCCL per process)."""

    class UniqueId(ctypes.Structure):
        _fields_ = [("internal", ctypes.c_byte * 128)]

    def __init__(self):
        path = None
        with open("/proc/self/maps") as f:
            for line in f:
                if "libnccl.so" in line:
                    path = line.split()[-1]
                    break
        self.lib = lib = ctypes.CDLL(path or "libnccl.so.2")
        self.path = path or "libnccl.so.2"
        lib.ncclGetLastError.restype = ctypes.c_char_p
        lib.ncclGetErrorString.restype = ctypes.c_char_p
        lib.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, Nccl.UniqueId, ctypes.c_int]
        lib.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                      ctypes.c_void_p, ctypes.c_void_p]
        lib.ncclCommGetAsyncError.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        for name in ("ncclCommAbort", "ncclCommDestroy", "ncclGetLastError"):
            getattr(lib, name).argtypes = [ctypes.c_void_p]
        version = ctypes.c_int()
        lib.ncclGetVersion(ctypes.byref(version))
        self.version = version.value

    def check(self, rc, what):
        if rc != NCCL_SUCCESS:
            raise RuntimeError(f"{what}: {self.lib.ncclGetErrorString(rc).decode()} ({rc})")

    def unique_id(self):
        uid = Nccl.UniqueId()
        self.check(self.lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        return bytes(uid.internal)

    def init(self, nranks, uid_bytes, rank):
        uid = Nccl.UniqueId()
        ctypes.memmove(uid.internal, uid_bytes, 128)
        comm = ctypes.c_void_p()
        self.check(self.lib.ncclCommInitRank(ctypes.byref(comm), nranks, uid, rank), "ncclCommInitRank")
        return comm

    def async_error(self, comm):
        rc = ctypes.c_int()
        self.check(self.lib.ncclCommGetAsyncError(comm, ctypes.byref(rc)), "ncclCommGetAsyncError")
        return rc.value


class Rank:
    """One rank: generation 0 until its communicator fails, the abort, then the later communicators."""

    def __init__(self, a):
        import torch
        self.t, self.a = torch, a
        torch.cuda.set_device(a.rank % torch.cuda.device_count())
        self.dev = torch.device("cuda")
        self.stream = torch.cuda.Stream()
        self.nccl = Nccl()
        self.bufs = {n: torch.empty(n, device=self.dev, dtype=torch.float32) for n in SIZES}
        self.base = torch.arange(max(SIZES), device=self.dev, dtype=torch.int64) % 251

    def comm(self, gen):
        uid_path = os.path.join(self.a.dir, f"uid-{gen}")
        if self.a.rank == 0:
            write_atomic(uid_path, self.nccl.unique_id())
        uid = wait_file(uid_path, 120)
        t0 = time.time()
        c = self.nccl.init(self.a.nranks, uid, self.a.rank)
        return c, time.time() - t0

    def enqueue(self, comm, i):
        """Starts all_reduce number i; returns its expected result's checker."""
        t, n, r = self.t, SIZES[i % len(SIZES)], self.a.rank
        x = self.bufs[n]
        with t.cuda.stream(self.stream):  # small integers: exact in float32 sums of a few ranks
            x.copy_((self.base[:n] + 1000 * (r + 1) + i % 97).to(t.float32))
        self.nccl.check(self.nccl.lib.ncclAllReduce(x.data_ptr(), x.data_ptr(), n, NCCL_FLOAT32, NCCL_SUM, comm,
                                                    self.stream.cuda_stream), "ncclAllReduce")
        k = self.a.nranks
        return lambda: int((x != (self.base[:n] * k + 1000 * k * (k + 1) // 2 + k * (i % 97))
                              .to(t.float32)).sum().item())

    def until_fault(self, comm):
        """Loops checked all_reduces; returns (error event fields) when NCCL reports one or the cap passes."""
        fault_path = os.path.join(self.a.dir, "fault")
        i, wrong, warm_at, fault_t, next_look = 0, 0, time.time() + self.a.warm_s, None, 0.0
        ready = False
        while True:
            check = self.enqueue(comm, i)
            while not self.stream.query():
                rc = self.nccl.async_error(comm)
                now = time.time()
                if rc not in (NCCL_SUCCESS, NCCL_IN_PROGRESS):
                    last = self.nccl.lib.ncclGetLastError(comm)
                    return {"error_t": now, "code": rc, "error": self.nccl.lib.ncclGetErrorString(rc).decode(),
                            "last_error": (last or b"").decode(errors="replace"), "ops": i, "wrong": wrong}
                if now > next_look:  # the fault's time, for the cap
                    next_look = now + 0.05
                    if fault_t is None and os.path.exists(fault_path):
                        fault_t = float(wait_file(fault_path, 1))
                    if fault_t is not None and now - fault_t > self.a.cap_s:
                        return {"error_t": None, "ops": i, "wrong": wrong}
                time.sleep(0.0002)
            wrong += check()
            i += 1
            if not ready and time.time() > warm_at and i >= 30:
                ready = True
                emit(ev="ready", rank=self.a.rank, ops=i, wrong=wrong, res=resources())

    def drain(self, timeout_s):
        """Whether the stream emptied (the aborted kernel left the GPU) within timeout_s."""
        end = time.time() + timeout_s
        while not self.stream.query():
            if time.time() > end:
                return False
            time.sleep(0.001)
        return True

    def run(self):
        a = self.a
        emit(ev="start", rank=a.rank, gen=a.gen, pid=os.getpid(), nccl=self.nccl.version, lib=self.nccl.path,
             res=resources())
        if a.gen == 0:
            comm, init_s = self.comm(0)
            emit(ev="init", rank=a.rank, gen=0, init_s=init_s)
            got = self.until_fault(comm)
            emit(ev="error", rank=a.rank, **got)
            t0 = time.time()
            self.nccl.lib.ncclCommAbort(comm)
            abort_s = time.time() - t0
            drained = self.drain(10)
            emit(ev="aborted", rank=a.rank, abort_s=abort_s, drained=drained, res=resources(),
                 names=thread_names())
            wait_file(os.path.join(a.dir, "go-1"), 180)
        for gen in range(1, a.gens + 1):
            comm, init_s = self.comm(gen)
            wrong = 0
            for i in range(a.ops):
                check = self.enqueue(comm, i)
                if not self.drain(60):
                    rc = self.nccl.async_error(comm)
                    emit(ev="gen", gen=gen, rank=a.rank, ok=False, ops=i, wrong=wrong, code=rc,
                         last_error=(self.nccl.lib.ncclGetLastError(comm) or b"").decode(errors="replace"))
                    return 1
                wrong += check()
            emit(ev="gen", gen=gen, rank=a.rank, ok=wrong == 0, ops=a.ops, wrong=wrong, init_s=init_s,
                 res=resources())
            self.nccl.check(self.nccl.lib.ncclCommDestroy(comm), "ncclCommDestroy")
            emit(ev="ended", gen=gen, rank=a.rank, res=resources(), names=thread_names())
            if wrong:
                return 1
        emit(ev="done", rank=a.rank)
        return 0


class Driver:
    """One case: the ranks (and relay), the fault, the replacement, the case's JSON."""

    def __init__(self, a):
        self.a = a
        self.dir = os.path.join(a.out, a.case)
        os.makedirs(self.dir, exist_ok=True)
        for name in os.listdir(self.dir):
            os.remove(os.path.join(self.dir, name))
        self.events, self.lock, self.procs, self.relay = [], threading.Condition(), {}, None
        self.placement = a.placement.split(";") if a.placement else []

    def start_rank(self, rank, gen):
        env = dict(os.environ, NCCL_HOSTID=f"jmesh-fault-{rank}")
        if self.placement:
            env["JMESH_ADDRESSES"] = self.placement[rank]
        path = os.path.join(self.dir, f"rank{rank}-gen{gen}.log")
        log = open(path, "a")  # its stderr, and NCCL's log, which goes to stdout between the events
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "rank", "--rank", str(rank), "--nranks",
                              str(self.a.nranks), "--gen", str(gen), "--dir", self.dir, "--cap-s", str(self.a.cap_s),
                              "--warm-s", str(self.a.warm_s), "--ops", str(self.a.ops), "--gens",
                              str(self.a.gens)],
                             env=env, stdout=subprocess.PIPE, stderr=log, text=True)
        self.procs[(rank, gen)] = p
        threading.Thread(target=self.read, args=(p, rank, gen, open(path, "a")), daemon=True).start()

    def read(self, p, rank, gen, log):
        for line in p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                log.write(line)
                log.flush()
                continue
            ev.update(at=time.time(), gen_proc=gen)
            with self.lock:
                self.events.append(ev)
                self.lock.notify_all()
        with self.lock:
            self.events.append({"ev": "exit", "rank": rank, "gen_proc": gen, "rc": p.wait(), "at": time.time()})
            self.lock.notify_all()

    def wait_for(self, kind, procs, timeout_s):
        """Waits until each process of procs ((rank, generation it started in) pairs) emitted kind or exited;
        returns the ranks of those that did not in time."""
        end = time.time() + timeout_s
        with self.lock:
            while True:
                done = {(e["rank"], e["gen_proc"]) for e in self.events if e["ev"] in (kind, "exit")}
                missing = [r for r, g in procs if (r, g) not in done]
                if not missing or time.time() > end:
                    return missing
                self.lock.wait(min(1.0, max(0.01, end - time.time())))

    def start_relay(self, tag):
        a = self.a
        log = open(os.path.join(self.dir, f"relay-{tag}.log"), "w")
        # the options of scripts/relay-lib.sh's jmesh_relay_start
        p = subprocess.Popen([a.java, "--enable-native-access=ALL-UNNAMED", "--add-exports",
                              "java.base/sun.nio.ch=ALL-UNNAMED", "-XX:CompileCommand=quiet",
                              "-XX:CompileCommand=CompileThresholdScaling,io.jmesh.*::*,0.1", "-cp", a.relay_cp,
                              "io.jmesh.cli.Jmesh", "relay", "--addresses", a.relay, "--provider", "tcp"],
                             env=dict(os.environ, JMESH_LOG_LEVEL="info"), stdout=log, stderr=subprocess.STDOUT)
        path = os.path.join(self.dir, f"relay-{tag}.log")
        end = time.time() + 30
        while time.time() < end:
            with open(path) as f:
                if any(line.startswith("jmesh relay: relaying") for line in f):
                    return p
            if p.poll() is not None:
                break
            time.sleep(0.1)
        p.kill()
        raise SystemExit(f"jmesh relay on {a.relay} did not start: see {path}")

    def run(self):
        a, n = self.a, self.a.nranks
        result = {"case": a.case, "nranks": n, "victim": a.victim, "fault": a.fault, "cap_s": a.cap_s,
                  "transport": os.environ.get("NCCL_NET", "?"),
                  "liveness_ms": os.environ.get("JMESH_LIVENESS_TIMEOUT_MS")}
        try:
            result.update(self.scenario(n))
        finally:
            for p in list(self.procs.values()) + ([self.relay] if self.relay else []):
                if p.poll() is None:
                    p.kill()
                    p.wait()
        result["events"] = self.events
        with open(os.path.join(a.out, f"{a.case}.json"), "w") as f:
            json.dump(result, f, indent=1)
        print(row(result))
        return 0 if result.get("passed") else 1

    def scenario(self, n):
        a = self.a
        if a.relay:
            self.relay = self.start_relay("0")
        ranks = list(range(n))
        for r in ranks:
            self.start_rank(r, 0)
        missing = self.wait_for("ready", [(r, 0) for r in ranks], a.ready_timeout_s)
        if missing:
            return {"passed": False, "problem": f"ranks {missing} not warm within {a.ready_timeout_s} s"}
        victim_rank = None if a.victim == "relay" else int(a.victim)
        target = self.relay if victim_rank is None else self.procs[(victim_rank, 0)]
        os.kill(target.pid, signal.SIGSTOP if a.fault == "freeze" else signal.SIGKILL)
        fault_t = time.time()
        write_atomic(os.path.join(self.dir, "fault"), repr(fault_t).encode())
        survivors = [r for r in ranks if r != victim_rank]
        missing = self.wait_for("aborted", [(r, 0) for r in survivors], a.cap_s + 30)
        # the operator replaces what failed: the victim goes for good, a new one takes its place
        if target.poll() is None:
            target.kill()
            target.wait()
        if victim_rank is None:
            self.relay = self.start_relay("1")
        else:
            self.start_rank(victim_rank, 1)
        write_atomic(os.path.join(self.dir, "go-1"), b"1")
        missing1 = self.wait_for("done", [(r, 0 if r in survivors else 1) for r in ranks], 60 + 40 * a.gens)
        with self.lock:
            crashed = sorted({e["rank"] for e in self.events
                              if e["ev"] == "exit" and e["rc"] != 0
                              and (e["rank"], e["gen_proc"]) != (victim_rank, 0)})
        passed = not missing and not missing1 and not crashed and self.gens_ok(ranks)
        problem = "; ".join(f"{what}: ranks {rs}" for what, rs in
                            (("no abort", missing), ("not done", missing1), ("exited non-zero", crashed)) if rs)
        return {"fault_t": fault_t, "survivors": survivors, "passed": passed,
                "problem": problem or ("" if passed else "a later communicator was wrong or failed")}

    def gens_ok(self, ranks):
        with self.lock:
            ok = {(e["rank"], e["gen"]) for e in self.events if e["ev"] == "gen" and e.get("ok")}
        return all((r, g) in ok for r in ranks for g in range(1, self.a.gens + 1))


def summarize(case):
    """The case's figures: per survivor, seconds from the fault to its error and its abort; resources."""
    ev = case.get("events", [])
    t = case.get("fault_t")
    errors = [e for e in ev if e["ev"] == "error"]
    detect = sorted(e["error_t"] - t for e in errors if t and e.get("error_t"))
    undetected = [e["rank"] for e in errors if not e.get("error_t")]
    aborts = [e["abort_s"] for e in ev if e["ev"] == "aborted"]
    causes = {e["rank"]: e.get("last_error", "").strip() for e in errors if e.get("error_t")}
    survivors = sorted({e["rank"] for e in ev if e["ev"] == "aborted"})
    gens = max((e["gen"] for e in ev if e["ev"] == "ended"), default=0)

    def res(kind, rank, gen=None):  # the survivors' own processes only (started in generation 0)
        for e in ev:
            if e["ev"] == kind and e["rank"] == rank and e.get("gen_proc") == 0 and e.get("gen") == gen:
                return e["res"]
        return None
    trail = {}  # threads/sockets after the abort, then after each later communicator ended
    grown = {}  # the most any survivor grew from the first later communicator's end to the last's
    for r in survivors:
        seq = [res("aborted", r)] + [res("ended", r, g) for g in range(1, gens + 1)]
        trail[r] = [f"{x['threads']}/{x['sockets']}" if x else "?" for x in seq]
        first, last = res("ended", r, 1), res("ended", r, gens)
        if first and last:
            for key in ("threads", "sockets", "fds", "rss_kb"):
                grown[key] = max(grown.get(key, -1 << 60), last[key] - first[key])
    return {"detect": detect, "undetected": undetected, "abort_max_s": max(aborts, default=None),
            "causes": causes, "trail": trail, "grown": grown, "gens": gens}


def row(case):
    s = summarize(case)
    d = s["detect"]
    det = (f"{d[0]:.2f}-{d[-1]:.2f} s" if len(d) > 1 else f"{d[0]:.2f} s") if d else "-"
    if s["undetected"]:
        det += f"; none within {case['cap_s']:g} s on rank(s) {', '.join(map(str, s['undetected']))}"
    ab = f"{s['abort_max_s']:.2f} s" if s["abort_max_s"] is not None else "-"
    restart = f"ok, {s['gens']} communicators" if case.get("passed") else "FAILED: " + str(case.get("problem", ""))
    first = min(s["trail"]) if s["trail"] else None
    trail = f"rank {first}: " + " → ".join(s["trail"][first]) if first is not None else "-"
    g = s["grown"]
    grown = (f"{g['threads']:+d} / {g['sockets']:+d} / {g['rss_kb'] / 1024:+.0f} MiB" if g else "-")
    causes = " · ".join(f"{r}: {c[:150]}" for r, c in sorted(s["causes"].items()))
    return (f"| {case['case']} | {case['nranks']} | {case['victim']} | {case['fault']} | {det} | {ab} | {restart} "
            f"| {trail} | {grown} | {causes} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["drive", "rank", "summary"])
    p.add_argument("--case", default="case")
    p.add_argument("--out", default="target/nccl-fault")
    p.add_argument("--nranks", type=int, default=2)
    p.add_argument("--victim", default="1", help="a rank, or 'relay' (the jmesh relay process)")
    p.add_argument("--fault", choices=["freeze", "kill"], default="kill")
    p.add_argument("--placement", default="", help="each rank's JMESH_ADDRESSES, ';' between ranks")
    p.add_argument("--relay", default="", help="the addresses of a jmesh relay process the placement needs")
    p.add_argument("--relay-cp", default="")
    p.add_argument("--java", default="java")
    p.add_argument("--cap-s", type=float, default=25.0, help="a survivor without an error this long gives up")
    p.add_argument("--warm-s", type=float, default=2.0)
    p.add_argument("--ready-timeout-s", type=float, default=120.0)
    p.add_argument("--ops", type=int, default=30, help="checked all_reduces in each later communicator")
    p.add_argument("--gens", type=int, default=3, help="communicators made one after another after the fault")
    p.add_argument("--rank", type=int)
    p.add_argument("--gen", type=int, default=0)
    p.add_argument("--dir")
    a = p.parse_args()
    if a.mode == "rank":
        return Rank(a).run()
    if a.mode == "drive":
        return Driver(a).run()
    cases = sorted(f for f in os.listdir(a.out) if f.endswith(".json"))
    print("| case | ranks | victim | fault | fault to error, every survivor | abort (slowest) | restart "
          "| threads/sockets after the abort → after each later communicator's destroy | grown from the first "
          "later destroy to the last, any survivor (threads / sockets / RSS) | cause each survivor was told "
          "(ncclGetLastError) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    failed = 0
    for name in cases:
        with open(os.path.join(a.out, name)) as f:
            case = json.load(f)
        print(row(case))
        failed += not case.get("passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The benchmark driver: bench/run starts the servers, this measures.

measure.py --rlock BIN --tmp DIR --results FILE

Reads the servers from the environment that bench/run sets:
  BENCH_RLOCK_PORT, BENCH_REDISPY_PORT, BENCH_ETCD_PORT  a port, or empty
  BENCH_RLOCK_WHY, BENCH_REDISPY_WHY, BENCH_ETCD_WHY     why not, when empty
  BENCH_SENTINEL_URL, BENCH_SENTINEL_WHY   the redis+sentinel:// URL, or why not
  BENCH_CLUSTER_URL, BENCH_CLUSTER_WHY     the redis+cluster:// URL, or why not
  BENCH_REDLOCK_URLS, BENCH_REDLOCK_WHY    the Redlock masters' redis:// URLs,
                                           space-separated, or why not
Prints the markdown table (and, when P1 or P3 ran, the kinds of lock's:
--limit 3 and --shared next to a plain lock) on stdout and writes them, with
the machine facts, to FILE. Every loop and wait is bounded; every process it starts leads its own
process group and is killed (by that group's id) before it returns. How each
metric is taken: bench/README.md.
"""

import argparse
import datetime
import os
import platform
import random
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "child.sh")
CRITICAL = os.path.join(HERE, "critical.sh")
SECTION = os.path.join(HERE, "section.sh")
WORKER = os.path.join(HERE, "worker.sh")
REDIS_PY_LOCK = os.path.join(HERE, "redis_py_lock.py")

# The table's columns. rlock-sentinel, rlock-cluster and rlock-redlock are
# rlock against a Sentinel topology, a Redis Cluster and a quorum of 5
# independent masters; they are measured in P1 and P2 only (Tool.metrics).
TOOLS = ("rlock", "rlock-sentinel", "rlock-cluster", "rlock-redlock", "flock",
         "etcd", "redis-py")
TOPOLOGY_METRICS = ("p1", "p2")
# What each topology column's ratios are to, in this order.
RATIO_BASES = {
    "rlock-sentinel": ("rlock", "flock"),
    "rlock-cluster": ("rlock", "rlock-sentinel", "flock"),
    "rlock-redlock": ("rlock", "flock"),
}

# Issue #14: kinds of lock side by side in P1 and P3, in a section of their
# own: rlock's plain lock, a semaphore and a shared lock on the same server,
# and flock exclusive and shared. "rlock" and "flock" are the table's columns.
KIND_LIMIT = 3
KINDS = ("rlock", "rlock-limit", "rlock-shared", "flock", "flock-shared")
KIND_EXTRA = ("rlock-limit", "rlock-shared", "flock-shared")  # not in TOOLS
KIND_LABELS = {
    "rlock": ("plain rlock", "`rlock NAME CMD`"),
    "rlock-limit": (f"rlock --limit {KIND_LIMIT}", f"`rlock --limit {KIND_LIMIT} NAME CMD`"),
    "rlock-shared": ("rlock --shared", "`rlock --shared NAME CMD`"),
    "flock": ("flock", "`flock FILE CMD`"),
    "flock-shared": ("flock -s", "`flock -s FILE CMD`"),
}
# What each kind's ratios are to, in this order.
KIND_BASES = {
    "rlock": ("flock",),
    "rlock-limit": ("rlock", "flock"),
    "rlock-shared": ("rlock", "flock", "flock-shared"),
    "flock": (),
    "flock-shared": ("flock",),
}
KIND_METRICS = ("p1", "p3kinds")

P1_RUNS = 50
P1_WARMUP = 3
P1_PAUSE = 0.03  # seconds of quiet before each run
P2_ROUNDS = 3  # the tools take turns, round by round
P2_HANDOFFS = 10  # per round
P2_HOLD = "0.3"  # seconds each child holds the lock in P2
P2_FIRST_HOLD = "1.0"  # the first holder: time for the first waiters to queue
P3_WORKERS = 8
P3_RUNS = 25
P3_ROUNDS = 3  # the tools take turns; the cell gives the median round
P4_RUNS = 3
P5_WAITERS = 20
P5_WINDOW = 5.0
P6_LOCKS = 10_000
P6_STATUS_RUNS = 3
P6_HOLD = "0.1"


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- Redis

class Resp:
    """A minimal Redis client: enough for INFO, PUBSUB, MONITOR, pipelines."""

    def __init__(self, port, db=0, timeout=20.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.file = self.sock.makefile("rb")
        if db:
            self.call("SELECT", str(db))

    @staticmethod
    def encode(args):
        out = [b"*%d\r\n" % len(args)]
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
        return b"".join(out)

    def send(self, *commands):
        self.sock.sendall(b"".join(self.encode(c) for c in commands))

    def read(self):
        line = self.file.readline()
        if not line:
            raise ConnectionError("connection closed by Redis")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError("Redis error: " + rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self.file.read(size + 2)[:-2]
            return data.decode(errors="replace")
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self.read() for _ in range(size)]
        raise RuntimeError(f"bad reply {line!r}")

    def call(self, *args):
        self.send(args)
        return self.read()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def info_field(port, section, field):
    conn = Resp(port)
    try:
        text = conn.call("INFO", section)
    finally:
        conn.close()
    match = re.search(rf"^{field}:(\d+)", text, re.M)
    return int(match.group(1))


def total_commands(port):
    return info_field(port, "stats", "total_commands_processed")


class Monitor:
    """Counts what a Redis server executes: requests from clients, and the
    commands Lua scripts run (MONITOR shows those as "[db lua]")."""

    def __init__(self, port):
        self.conn = Resp(port, timeout=None)
        self.conn.send(("MONITOR",))
        self.conn.read()
        self.requests = 0
        self.scripted = 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        lua = re.compile(rb"^\+\d+\.\d+ \[\d+ lua\]")
        try:
            for line in self.conn.file:
                if lua.match(line):
                    self.scripted += 1
                elif line.startswith(b"+"):
                    self.requests += 1
        except (OSError, ValueError):
            pass

    def stop(self):
        time.sleep(0.05)  # what was executed has reached us
        try:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(5)
        self.conn.close()


# ------------------------------------------------------------- processes

class Procs:
    """Processes started by one measurement; each leads its own group."""

    def __init__(self):
        self.procs = []

    def start(self, argv, env, stderr, stdout=subprocess.DEVNULL):
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                stdout=stdout, stderr=stderr,
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def wait_all(self, timeout):
        deadline = time.monotonic() + timeout
        for proc in self.procs:
            left = deadline - time.monotonic()
            try:
                proc.wait(max(left, 0.01))
            except subprocess.TimeoutExpired:
                return False
        return True

    def kill_all(self, grace=5.0):
        alive = [p for p in self.procs if p.poll() is None]
        for proc in alive:
            signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in alive:
            try:
                proc.wait(max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                pass
        for proc in self.procs:
            # The group may outlive its leader (a child of a killed tool).
            signal_group(proc.pid, signal.SIGKILL)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.procs = []


def wait_with_usage(proc, timeout):
    """Waits for proc (killing its group after `timeout` s); returns its exit
    status ("timeout" if killed so) and the rusage of it and the children it
    waited for. A blocking wait4, so that polling does not disturb the run."""
    timer = threading.Timer(timeout, signal_group, (proc.pid, signal.SIGKILL))
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        expired = not timer.is_alive()
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return ("timeout" if expired and proc.returncode < 0 else proc.returncode), usage


def signal_group(pgid, number):
    try:
        os.killpg(pgid, number)
    except (ProcessLookupError, PermissionError):
        pass


ALL_PROCS = []  # every Procs, for the cleanup on the way out


def new_procs():
    procs = Procs()
    ALL_PROCS.append(procs)
    return procs


def wait_until(predicate, timeout, step=0.005):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


# ----------------------------------------------------------------- tools

class Tool:
    def __init__(self, key, available, why="", port=None, metrics=None):
        self.key = key
        self.available = available
        self.why = why
        self.port = port
        # Prefixes of the metrics measured for this tool; None: all of them.
        self.metrics = metrics
        self.env = dict(os.environ, LC_ALL="C")
        self.prefix = []
        self.after_name = []
        self.name_arg = lambda name: name

    def argv(self, name, command):
        return self.prefix + [self.name_arg(name)] + self.after_name + command

    def measures(self, metric):
        return self.metrics is None or metric.startswith(self.metrics)

    def unmeasured(self):
        measured = " and ".join(m.upper() for m in self.metrics)
        return f"n/a: measured for {measured} only"


def make_tools(args):
    tools = {}
    env = os.environ

    port = env.get("BENCH_RLOCK_PORT")
    rlock = Tool("rlock", bool(port), env.get("BENCH_RLOCK_WHY", ""),
                 int(port) if port else None)
    if port:
        rlock.url = f"redis://127.0.0.1:{port}/0"
        rlock.prefix = [args.rlock, "--url", rlock.url]
    tools["rlock"] = rlock

    for key, var in (("rlock-sentinel", "SENTINEL"), ("rlock-cluster", "CLUSTER")):
        url = env.get(f"BENCH_{var}_URL")
        tools[key] = topology_tool(args, key, [url] if url else [],
                                   env.get(f"BENCH_{var}_WHY", ""))
    tools["rlock-redlock"] = topology_tool(
        args, "rlock-redlock", env.get("BENCH_REDLOCK_URLS", "").split(),
        env.get("BENCH_REDLOCK_WHY", ""))

    flock_bin = shutil.which("flock")
    flock = Tool("flock", bool(flock_bin), "flock not installed")
    flock_dir = os.path.join(args.tmp, "flock")
    os.makedirs(flock_dir, exist_ok=True)
    flock.prefix = [flock_bin or "flock"]
    flock.name_arg = lambda name: os.path.join(flock_dir, name)
    tools["flock"] = flock

    for key, extra in (("rlock-limit", ["--limit", str(KIND_LIMIT)]),
                       ("rlock-shared", ["--shared"])):
        kind = Tool(key, rlock.available, rlock.why, rlock.port, metrics=KIND_METRICS)
        kind.prefix = rlock.prefix + extra
        tools[key] = kind
    flock_shared = Tool("flock-shared", flock.available, flock.why, metrics=KIND_METRICS)
    flock_shared.prefix = flock.prefix + ["-s"]
    flock_shared.name_arg = flock.name_arg
    tools["flock-shared"] = flock_shared

    port = env.get("BENCH_ETCD_PORT")
    etcd = Tool("etcd", bool(port), env.get("BENCH_ETCD_WHY", ""),
                int(port) if port else None)
    etcd.env.update(ETCDCTL_API="3",
                    ETCDCTL_ENDPOINTS=f"http://127.0.0.1:{port}")
    etcd.prefix = ["etcdctl", "lock"]
    etcd.after_name = ["--"]  # else etcdctl parses the command's flags
    tools["etcd"] = etcd

    port = env.get("BENCH_REDISPY_PORT")
    redis_py = Tool("redis-py", bool(port), env.get("BENCH_REDISPY_WHY", ""),
                    int(port) if port else None)
    redis_py.env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
    redis_py.prefix = [REDIS_PY_LOCK]
    tools["redis-py"] = redis_py
    return tools


def topology_tool(args, key, urls, why):
    """rlock on a topology at `urls`, one --url each (several: a Redlock
    quorum; none: not started, `why`)."""
    tool = Tool(key, bool(urls), why, metrics=TOPOLOGY_METRICS)
    if urls:
        # The topology is seconds old: with the restart grace every acquire
        # would wait until it is 30 s old, which is not what is measured
        # (bench/README.md).
        tool.prefix = [args.rlock]
        for url in urls:
            tool.prefix += ["--url", url]
        tool.prefix += ["--restart-grace", "0"]
    return tool


# ------------------------------------------------------------ statistics

def percentile(values, p):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def count_lines(path):
    """The lines of the file at `path`; 0 when there is none."""
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for _ in f)


def read_events(path):
    events = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[0] in ("S", "E"):
                events.append((float(parts[1]), parts[0], parts[2]))
    events.sort()
    return events


def count_starts(path):
    with open(path) as f:
        return sum(1 for line in f if line.startswith("S "))


def gaps_of(events):
    """Handoff gaps (end of one holder's child to the start of the next one's)
    and the number of starts while another child was still running."""
    running = set()
    last_end = None
    gaps, overlaps = [], 0
    for t, kind, ident in events:
        if kind == "S":
            if running:
                overlaps += 1
            elif last_end is not None:
                gaps.append(t - last_end)
            running.add(ident)
        else:
            running.discard(ident)
            if not running:
                last_end = t
    return gaps, overlaps


def most_at_once(events):
    """The most holders whose S..E intervals overlapped. The events are in
    time order, an E before an S of the same instant, so a holder that
    leaves as another enters is not counted twice."""
    inside, most = set(), 0
    for _, kind, ident in events:
        if kind == "S":
            inside.add(ident)
            most = max(most, len(inside))
        else:
            inside.discard(ident)
    return most


class Failed(Exception):
    pass


# --------------------------------------------------------------- metrics

class Bench:
    def __init__(self, args):
        self.args = args
        self.tools = make_tools(args)
        self.tmp = args.tmp
        self.r = {}  # metric -> tool -> value (number, tuple) or error text
        self.notes = []
        self.overhead = {}  # port -> commands the measuring itself costs

    def available(self, metric, keys=TOOLS):
        """The tools of `keys` that can run and are measured in `metric`."""
        return [self.tools[k] for k in keys
                if self.tools[k].available and self.tools[k].measures(metric)]

    def record(self, metric, tool, value):
        self.r.setdefault(metric, {})[tool] = value

    def errfile(self, label):
        return open(os.path.join(self.tmp, f"{label}.stderr"), "ab")

    def guarded(self, metric, tool, fn):
        try:
            fn()
        except Exception as error:  # noqa: BLE001 - record, never fake
            log(f"{metric} {tool.key}: {error}")
            self.record(metric, tool.key, f"error: {error}")

    # P1 ------------------------------------------------------------------
    def p1(self):
        log(f"P1 uncontended: {P1_RUNS} runs of 'LOCK NAME true' per tool")
        tools = self.available("p1", TOOLS + KIND_EXTRA)
        samples = {t.key: [] for t in tools}
        cpu = {t.key: [] for t in tools}
        failed = {}
        bare = []
        err = self.errfile("p1")
        shuffle = random.Random(1)
        for i in range(P1_WARMUP + P1_RUNS):
            time.sleep(P1_PAUSE)
            start = time.perf_counter()
            wait_with_usage(subprocess.Popen(["true"], stdin=subprocess.DEVNULL), 30)
            if i >= P1_WARMUP:
                bare.append(time.perf_counter() - start)
            # A different order each time, and a pause before each run: what
            # a tool leaves behind (etcd's fsync after etcdctl exits, a big
            # Python process's teardown) must not land on the same next tool.
            for tool in shuffle.sample(tools, len(tools)):
                if tool.key in failed:
                    continue
                time.sleep(P1_PAUSE)
                start = time.perf_counter()
                proc = subprocess.Popen(tool.argv(f"bench-p1-{tool.key}", ["true"]),
                                        env=tool.env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=err)
                code, usage = wait_with_usage(proc, 30)
                elapsed = time.perf_counter() - start
                if code != 0:
                    failed[tool.key] = f"error: exit {code}"
                elif i >= P1_WARMUP:
                    samples[tool.key].append(elapsed)
                    cpu[tool.key].append(usage.ru_utime + usage.ru_stime)
        for tool in tools:
            if tool.key in failed:
                self.record("p1", tool.key, failed[tool.key])
            else:
                self.record("p1", tool.key, statistics.median(samples[tool.key]))
                self.record("p1cpu", tool.key, statistics.median(cpu[tool.key]))
        self.bare_spawn = statistics.median(bare)

    # P4 ------------------------------------------------------------------
    def p4(self):
        log(f"P4 memory: peak RSS around 'sleep 1', {P4_RUNS} runs per tool")
        time_bin = "/usr/bin/time"
        if os.access(time_bin, os.X_OK):
            out = os.path.join(self.tmp, "p4-sleep.time")
            floor = []
            for _ in range(P4_RUNS):
                subprocess.run([time_bin, "-f", "%M", "-o", out, "sleep", "0.1"],
                               env=dict(os.environ, LC_ALL="C"),
                               stdin=subprocess.DEVNULL, timeout=30, check=False)
                with open(out) as f:
                    floor.append(int(f.read().split()[-1]))
            self.sleep_rss = statistics.median(floor) / 1024
        for tool in self.available("p4"):
            if not os.access(time_bin, os.X_OK):
                self.record("p4", tool.key, "n/a: /usr/bin/time missing")
                continue
            def run(tool=tool):
                values = []
                out = os.path.join(self.tmp, f"p4-{tool.key}.time")
                for _ in range(P4_RUNS):
                    argv = [time_bin, "-f", "%M", "-o", out] + tool.argv(
                        f"bench-p4-{tool.key}", ["sleep", "1"])
                    done = subprocess.run(argv, env=tool.env, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL,
                                          stderr=self.errfile("p4"), timeout=60,
                                          check=False)
                    if done.returncode != 0:
                        raise Failed(f"exit {done.returncode}")
                    with open(out) as f:
                        values.append(int(f.read().split()[-1]))
                self.record("p4", tool.key, statistics.median(values) / 1024)
            self.guarded("p4", tool, run)

    # P2 ------------------------------------------------------------------
    def handoffs(self, tool, name, queued, handoffs, hold, first_hold):
        """Runs 1 + handoffs + queued - 1 children through the lock, keeping
        `queued` waiters behind the holder, and returns the first `handoffs`
        gaps and the number of overlaps."""
        path = os.path.join(self.tmp, f"{name}.log")
        open(path, "w").close()
        procs = new_procs()
        err = self.errfile(name)
        total = 1 + handoffs + queued - 1
        launched = 0

        def launch(hold_s):
            nonlocal launched
            procs.start(tool.argv(name, [CHILD, path, str(launched), hold_s]),
                        tool.env, err)
            launched += 1

        try:
            launch(first_hold)
            if not wait_until(lambda: count_starts(path) >= 1, 30):
                raise Failed("the first holder never started")
            deadline = time.monotonic() + 40 + total * 3
            while time.monotonic() < deadline:
                started = count_starts(path)
                while launched < total and launched - started < queued:
                    launch(hold)
                if launched == total and all(p.poll() is not None for p in procs.procs):
                    break
                time.sleep(0.005)
            else:
                raise Failed("timed out")
            codes = [p.returncode for p in procs.procs]
            if any(codes):
                raise Failed(f"exit statuses {sorted(set(codes))}")
        finally:
            procs.kill_all()
        gaps, overlaps = gaps_of(read_events(path))
        if len(gaps) < handoffs:
            raise Failed(f"only {len(gaps)} handoffs")
        return gaps[:handoffs], overlaps

    def p2(self):
        for queued in (1, 8):
            log(f"P2 handoff: {P2_ROUNDS} rounds of {P2_HANDOFFS} handoffs, "
                f"{queued} waiting")
            metric = f"p2q{queued}"
            gaps = {}
            for round_ in range(P2_ROUNDS):
                for tool in self.available(metric):
                    if isinstance(self.r.get(metric, {}).get(tool.key), str):
                        continue  # failed in an earlier round
                    def run(tool=tool, round_=round_):
                        found, overlaps = self.handoffs(
                            tool, f"bench-p2q{queued}-{tool.key}-{round_}", queued,
                            P2_HANDOFFS, P2_HOLD, P2_FIRST_HOLD)
                        if overlaps:
                            raise Failed(f"{overlaps} overlapping holders")
                        gaps.setdefault(tool.key, []).extend(found)
                    self.guarded(metric, tool, run)
            for key, found in gaps.items():
                if not isinstance(self.r.get(metric, {}).get(key), str):
                    self.record(metric, key, (percentile(found, 50), percentile(found, 95)))

    def rounds_of(self, metric, tools, one_round):
        """P3_ROUNDS rounds of one_round(tool, round) for each tool, taking
        turns; returns each tool's results by key, leaving out a tool that
        failed (its cell then says why)."""
        rounds = {}
        for round_ in range(P3_ROUNDS):
            for tool in tools:
                if isinstance(self.r.get(metric, {}).get(tool.key), str):
                    continue  # failed in an earlier round
                self.guarded(metric, tool, lambda tool=tool, round_=round_:
                             rounds.setdefault(tool.key, []).append(
                                 one_round(tool, round_)))
        return {key: results for key, results in rounds.items()
                if not isinstance(self.r.get(metric, {}).get(key), str)}

    # P3 ------------------------------------------------------------------
    def p3(self):
        log(f"P3 contended: {P3_ROUNDS} rounds of {P3_WORKERS} processes x "
            f"{P3_RUNS} runs per tool")
        rounds = self.rounds_of("p3", self.available("p3"), self.p3_round)
        for key, results in rounds.items():
            rates = sorted(r[0] for r in results)
            self.record("p3", key, (statistics.median(rates),
                                    sum(r[1] for r in results),
                                    sorted({r[2] for r in results}),
                                    sum(r[3] for r in results)))
        self.p3_kinds()

    def p3_round(self, tool, round_):
        """One round: returns (runs/s, overlaps, final counter, failed runs)."""
        work = os.path.join(self.tmp, f"p3-{tool.key}-{round_}")
        os.makedirs(work)
        with open(os.path.join(work, "counter"), "w") as f:
            f.write("0\n")
        failures = os.path.join(work, "failures")
        elapsed = self.run_workers(tool, f"bench-p3-{tool.key}-{round_}",
                                   [CRITICAL, work], failures, f"p3-{tool.key}")
        overlaps = count_lines(os.path.join(work, "overlaps"))
        with open(os.path.join(work, "counter")) as f:
            counter = int(f.read().strip() or 0)
        return (P3_WORKERS * P3_RUNS / elapsed, overlaps, counter,
                count_lines(failures))

    def run_workers(self, tool, name, child, failures, label):
        """P3_WORKERS workers, each running `child` under lock `name` with
        `tool` P3_RUNS times (a failed run adds a line to `failures`);
        returns the seconds they took."""
        procs = new_procs()
        err = self.errfile(label)
        start = time.perf_counter()
        try:
            for _ in range(P3_WORKERS):
                procs.start([WORKER, str(P3_RUNS), failures]
                            + tool.argv(name, child), tool.env, err)
            finished = procs.wait_all(240)
            elapsed = time.perf_counter() - start
        finally:
            procs.kill_all()
        if not finished:
            raise Failed("timed out after 240 s")
        return elapsed

    # P3, kinds of lock (issue #14) ----------------------------------------
    def p3_kinds(self):
        log(f"P3 kinds of lock: {P3_ROUNDS} rounds of {P3_WORKERS} processes x "
            f"{P3_RUNS} runs of section.sh per kind")
        rounds = self.rounds_of("p3kinds", self.available("p3kinds", KINDS),
                                self.p3_kinds_round)
        for key, results in rounds.items():
            self.record("p3kinds", key, (statistics.median(r[0] for r in results),
                                         max(r[1] for r in results),
                                         sum(r[2] for r in results)))

    def p3_kinds_round(self, tool, round_):
        """One round of section.sh: returns (runs/s, most holders inside at
        once, failed runs)."""
        work = os.path.join(self.tmp, f"p3kinds-{tool.key}-{round_}")
        os.makedirs(work)
        events = os.path.join(work, "events")
        open(events, "w").close()
        failures = os.path.join(work, "failures")
        elapsed = self.run_workers(tool, f"bench-p3kinds-{tool.key}-{round_}",
                                   [SECTION, work], failures,
                                   f"p3kinds-{tool.key}")
        failed = count_lines(failures)
        found = read_events(events)
        starts = sum(1 for e in found if e[1] == "S")
        if starts + failed != P3_WORKERS * P3_RUNS:
            raise Failed(f"{starts} passes and {failed} failed runs of "
                         f"{P3_WORKERS * P3_RUNS}")
        return (P3_WORKERS * P3_RUNS / elapsed, most_at_once(found), failed)

    # P5 ------------------------------------------------------------------
    def etcd_messages(self, port):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith("grpc_server_msg_received_total"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def measure_overhead(self, port):
        """Commands the measuring costs: INFO, MONITOR (and nothing else)."""
        if port not in self.overhead:
            before = total_commands(port)
            Monitor(port).stop()
            self.overhead[port] = total_commands(port) - before
        return self.overhead[port]

    def p5(self):
        log(f"P5 server load: {P5_WAITERS} waiters for {P5_WINDOW:.0f} s on a held lock")
        for tool in self.available("p5", ("rlock", "etcd", "redis-py")):
            self.guarded("p5", tool, lambda tool=tool: self.p5_tool(tool))
        self.record("p5", "flock", "n/a (kernel)")

    def p5_tool(self, tool):
        name = f"bench-p5-{tool.key}"
        path = os.path.join(self.tmp, f"{name}.log")
        gate = os.path.join(self.tmp, f"{name}.gate")
        open(path, "w").close()
        procs = new_procs()
        err = self.errfile(name)
        if tool.key != "etcd":
            overhead = self.measure_overhead(tool.port)
        try:
            procs.start(tool.argv(name, [CHILD, path, "H", "0", gate]), tool.env, err)
            if not wait_until(lambda: count_starts(path) >= 1, 30):
                raise Failed("the holder never started")
            for _ in range(P5_WAITERS):
                procs.start(tool.argv(name, ["true"]), tool.env, err)
            if not wait_until(lambda: self.waiting(tool, name) >= P5_WAITERS, 30, 0.05):
                raise Failed(f"waiters not all waiting: {self.waiting(tool, name)}")
            time.sleep(0.5)
            if tool.key == "etcd":
                before = self.etcd_messages(tool.port)
                time.sleep(P5_WINDOW)
                after = self.etcd_messages(tool.port)
                self.record("p5", tool.key, ((after - before) / P5_WAITERS, None))
            else:
                before = total_commands(tool.port)
                monitor = Monitor(tool.port)
                time.sleep(P5_WINDOW)
                monitor.stop()
                after = total_commands(tool.port)
                self.record("p5", tool.key,
                            ((after - before - overhead) / P5_WAITERS,
                             monitor.requests / P5_WAITERS))
            if any(p.poll() is not None for p in procs.procs):
                raise Failed("a waiter or the holder exited during the window")
        finally:
            procs.kill_all()

    def waiting(self, tool, name):
        """How many waiters are set up and waiting (the holder not counted)."""
        if tool.key == "rlock":
            # A waiter blocks in BLPOP on its wake-up lists while it sleeps.
            conn = Resp(tool.port)
            try:
                clients = conn.call("CLIENT", "LIST")
            finally:
                conn.close()
            return sum(" cmd=blpop " in f" {line} " for line in clients.splitlines())
        if tool.key == "redis-py":
            # redis-py connects with its first SET NX: connected = polling.
            # Not counted: the holder's connection and the one asking.
            return info_field(tool.port, "clients", "connected_clients") - 2
        done = subprocess.run(["etcdctl", "get", "--prefix", "--keys-only", name + "/"],
                              env=tool.env, capture_output=True, text=True,
                              timeout=10, check=False)
        return len([line for line in done.stdout.splitlines() if line.strip()]) - 1

    # P6 ------------------------------------------------------------------
    def p6_status(self):
        tool = self.tools["rlock"]
        if not tool.available:
            return
        log(f"P6 scale: rlock status over {P6_LOCKS} held locks")
        def run():
            conn = Resp(tool.port, db=1)
            try:
                conn.call("FLUSHDB")
                now_ms = int(time.time() * 1000)
                batch = []
                for i in range(P6_LOCKS):
                    key = f"rlock:{{bench-p6-status-{i:05d}}}"
                    batch.append(("HSET", key, "token", secrets.token_hex(16),
                                  "fence", i + 1, "host", "bench-host",
                                  "pid", 10000 + i, "user", "bench",
                                  "command", f"./job.sh --part {i}",
                                  "acquired_ms", now_ms, "ttl_ms", 600000,
                                  "renewals", 0))
                    batch.append(("PEXPIRE", key, 600000))
                    if len(batch) >= 2000 or i == P6_LOCKS - 1:
                        conn.send(*batch)
                        for _ in batch:
                            conn.read()
                        batch = []
                size = conn.call("DBSIZE")
            finally:
                conn.close()
            if size != P6_LOCKS:
                raise Failed(f"DBSIZE {size} after creating {P6_LOCKS} locks")
            times, rss = [], []
            out = os.path.join(self.tmp, "p6-status.out")
            tfile = os.path.join(self.tmp, "p6-status.time")
            for _ in range(P6_STATUS_RUNS):
                with open(out, "wb") as stdout:
                    start = time.perf_counter()
                    done = subprocess.run(
                        ["/usr/bin/time", "-f", "%M", "-o", tfile, self.args.rlock,
                         "status", "--url", f"redis://127.0.0.1:{tool.port}/1"],
                        stdin=subprocess.DEVNULL, stdout=stdout,
                        stderr=self.errfile("p6-status"), timeout=60, check=False)
                    times.append(time.perf_counter() - start)
                if done.returncode != 0:
                    raise Failed(f"exit {done.returncode}")
                with open(out) as f:
                    lines = sum(1 for _ in f)
                if lines != P6_LOCKS + 1:
                    raise Failed(f"{lines} lines of output, expected {P6_LOCKS + 1}")
                with open(tfile) as f:
                    rss.append(int(f.read().split()[-1]) / 1024)
            self.record("p6status", "rlock", (statistics.median(times), max(rss)))
        self.guarded("p6status", tool, run)

    def herd(self, tool, fair, waiters, handoffs):
        """`waiters` rlock runs queue behind a holder; returns the first
        `handoffs` gaps and the Redis commands and requests per handoff."""
        mode = "fair" if fair else "default"
        name = f"bench-p6-{mode}-{waiters}"
        path = os.path.join(self.tmp, f"{name}.log")
        gate = os.path.join(self.tmp, f"{name}.gate")
        open(path, "w").close()
        procs = new_procs()
        err = self.errfile(name)
        extra = ["--fair"] if fair else []
        overhead = self.measure_overhead(tool.port)

        def argv(ident, hold, *rest):
            return (tool.prefix + extra + [name, CHILD, path, ident, hold] + list(rest))

        try:
            procs.start(argv("H", "0", gate), tool.env, err)
            if not wait_until(lambda: count_starts(path) >= 1, 30):
                raise Failed("the holder never started")
            for i in range(waiters):
                procs.start(argv(str(i), P6_HOLD), tool.env, err)
            if not wait_until(lambda: self.waiting(tool, name) >= waiters, 60, 0.05):
                raise Failed(f"only {self.waiting(tool, name)} of {waiters} waiting")
            time.sleep(0.2)
            before = total_commands(tool.port)
            monitor = Monitor(tool.port)
            with open(gate, "w"):
                pass
            if not wait_until(lambda: count_starts(path) >= handoffs + 1, 60):
                raise Failed("handoffs timed out")
            # The next release comes P6_HOLD after the last start: stop before.
            time.sleep(0.03)
            monitor.stop()
            after = total_commands(tool.port)
        finally:
            procs.kill_all()
        gaps, overlaps = gaps_of(read_events(path))
        if overlaps:
            raise Failed(f"{overlaps} overlapping holders")
        if len(gaps) < handoffs:
            raise Failed(f"only {len(gaps)} handoffs")
        commands = (after - before - overhead) / handoffs
        return gaps[:handoffs], commands, monitor.requests / handoffs

    def p6_herd(self):
        tool = self.tools["rlock"]
        if not tool.available:
            return
        for fair in (False, True):
            for waiters, handoffs in ((20, 10), (200, 20)):
                mode = "fair" if fair else "default"
                log(f"P6 scale: {waiters} rlock {'--fair ' if fair else ''}"
                    f"waiters, {handoffs} handoffs")
                def run(fair=fair, waiters=waiters, handoffs=handoffs, mode=mode):
                    gaps, commands, requests = self.herd(tool, fair, waiters, handoffs)
                    self.record(f"p6{mode}{waiters}", "rlock",
                                (percentile(gaps, 50), commands, requests))
                self.guarded(f"p6{mode}{waiters}", tool, run)


# ---------------------------------------------------------------- report

def ms(seconds):
    return f"{seconds * 1000:.2f}"


class Report:
    def __init__(self, bench):
        self.b = bench
        self.r = bench.r
        self.missed = []

    def cell(self, metric, tool, fmt):
        t = self.b.tools.get(tool)
        if t is not None and not t.available:
            return f"n/a: {t.why}"
        if t is not None and not t.measures(metric):
            return t.unmeasured()
        value = self.r.get(metric, {}).get(tool)
        if value is None:
            return "n/a"
        if isinstance(value, str):
            return value
        return fmt(value)

    def num(self, metric, tool, index=None):
        value = self.r.get(metric, {}).get(tool)
        if value is None or isinstance(value, str):
            return None
        return value if index is None else value[index]

    def verdict(self, label, checks):
        """checks: list of (description, ok or None when not measurable)."""
        if any(ok is None for _, ok in checks):
            unknown = [d for d, ok in checks if ok is None]
            failed = [d for d, ok in checks if ok is False]
            if failed:
                self.missed.append(f"{label}: {', '.join(failed)}")
                return "**missed**"
            return "not measured: " + ", ".join(unknown)
        failed = [d for d, ok in checks if not ok]
        if failed:
            self.missed.append(f"{label}: {', '.join(failed)}")
            return "**missed**"
        return "met"

    @staticmethod
    def le(a, b):
        return None if a is None or b is None else a <= b

    @staticmethod
    def lt(a, b):
        return None if a is None or b is None else a < b

    def ratios(self, tool, value, metric, index=None, what=""):
        """The ratio of `value` to flock's as " (2.10x)"; for a topology
        column to RATIO_BASES's, " (1.40x rlock, 2.10x flock)". `what` names
        the value ("p50") when the cell has several."""
        if tool in RATIO_BASES:
            bases = [(base, f" {base}") for base in RATIO_BASES[tool]]
        else:
            bases = [("flock", "")]
        parts = []
        for base, label in bases:
            other = self.num(metric, base, index)
            if other:
                parts.append(f"{value / other:.2f}x{label}")
        if not parts:
            return ""
        return f" ({what + ' ' if what else ''}{', '.join(parts)})"

    def rows(self):
        rows = []
        n = self.num
        flock1 = n("p1", "flock")

        def p1fmt_for(tool):
            def fmt(v):
                text = f"{ms(v)} ms" + self.ratios(tool, v, "p1")
                c = n("p1cpu", tool)
                if c is not None:
                    text += f"; CPU {ms(c)} ms" + self.ratios(tool, c, "p1cpu")
                return text
            return fmt

        def p2fmt_for(tool, metric):
            def fmt(v):
                text = f"{ms(v[0])} / {ms(v[1])}"
                if tool in RATIO_BASES:
                    text += self.ratios(tool, v[0], metric, 0, "p50")
                return text
            return fmt

        r1, f1 = n("p1", "rlock"), flock1
        rows.append([f"P1 uncontended `LOCK NAME true`, median of {P1_RUNS}"]
                    + [self.cell("p1", t, p1fmt_for(t)) for t in TOOLS]
                    + ["<= 1.3x flock",
                       self.verdict("P1", [("<= 1.3x flock",
                                            self.le(r1, None if f1 is None else 1.3 * f1))])])

        for queued in (1, 8):
            m = f"p2q{queued}"
            what = "1 waiter" if queued == 1 else "8 queued"
            rp50, rp95 = n(m, "rlock", 0), n(m, "rlock", 1)
            fp50, fp95 = n(m, "flock", 0), n(m, "flock", 1)
            ep50 = n(m, "etcd", 0)
            rows.append([f"P2 handoff, {what}: p50 / p95 of {P2_ROUNDS * P2_HANDOFFS}, ms"]
                        + [self.cell(m, t, p2fmt_for(t, m)) for t in TOOLS]
                        + ["p50 <= 1.5x flock and < etcd; p95 <= 2x flock",
                           self.verdict(f"P2 {what}", [
                               ("p50 <= 1.5x flock", self.le(rp50, fp50 and 1.5 * fp50)),
                               ("p50 < etcd", self.lt(rp50, ep50)),
                               ("p95 <= 2x flock", self.le(rp95, fp95 and 2 * fp95))])])

        rr, fr, er = n("p3", "rlock", 0), n("p3", "flock", 0), n("p3", "etcd", 0)
        ro, rc = n("p3", "rlock", 1), n("p3", "rlock", 2)
        rows.append([f"P3 contended, {P3_WORKERS} x {P3_RUNS} runs: runs/s (median of "
                     f"{P3_ROUNDS}); overlaps; final counter"]
                    + [self.cell("p3", t, lambda v: f"{v[0]:.1f}; {v[1]}; "
                                 + "/".join(str(c) for c in v[2])
                                 + (f"; {v[3]} runs failed" if v[3] else "")) for t in TOOLS]
                    + [">= 0.8x flock and > etcd; 0 overlaps; 200",
                       self.verdict("P3", [
                           (">= 0.8x flock runs/s", self.le(fr and 0.8 * fr, rr)),
                           ("> etcd runs/s", self.lt(er, rr)),
                           ("0 overlaps", None if ro is None else ro == 0),
                           ("counter 200", None if rc is None else rc == [200]),
                           ("no failed runs", None if rc is None else n("p3", "rlock", 3) == 0)])])

        r4, f4 = n("p4", "rlock"), n("p4", "flock")
        rows.append([f"P4 peak RSS around `sleep 1`, MiB (median of {P4_RUNS})"]
                    + [self.cell("p4", t, lambda v: f"{v:.1f}") for t in TOOLS]
                    + ["<= 2x flock",
                       self.verdict("P4", [("<= 2x flock RSS", self.le(r4, f4 and 2 * f4))])])

        def p5fmt(v):
            if v[1] is None:
                return f"{v[0]:.1f} gRPC msgs"
            return f"{v[0]:.1f} ({v[1]:.1f} requests)"

        r5 = n("p5", "rlock", 0)
        rows.append([f"P5 server commands per waiter, {P5_WAITERS} waiters x 5 s"]
                    + [self.cell("p5", t, p5fmt) for t in TOOLS]
                    + ["<= 1",
                       self.verdict("P5", [("<= 1 command per waiter", self.le(r5, 1.0))])])

        def rlock_only(metric, rlock_cell):
            """rlock's cell, the topology columns' "not measured", n/a else."""
            return [rlock_cell if t == "rlock"
                    else self.cell(metric, t, str) if t in RATIO_BASES
                    else "n/a" for t in TOOLS]

        s = self.r.get("p6status", {}).get("rlock")
        rows.append([f"P6 `rlock status`, {P6_LOCKS:,} held locks: time; peak RSS"]
                    + rlock_only("p6status", self.cell(
                        "p6status", "rlock", lambda v: f"{v[0]:.2f} s; {v[1]:.1f} MiB"))
                    + ["< 1 s, < 32 MiB",
                       self.verdict("P6 status", [
                           ("< 1 s", None if not isinstance(s, tuple) else s[0] < 1.0),
                           ("< 32 MiB", None if not isinstance(s, tuple) else s[1] < 32)])])

        for mode, label in (("default", "rlock"), ("fair", "rlock --fair")):
            small, big = n(f"p6{mode}20", "rlock"), n(f"p6{mode}200", "rlock")

            def fmt(v):
                return f"{ms(v[0])} ms; {v[1]:.1f} ({v[2]:.1f} requests)"

            cell = (f"20 waiters: {self.cell(f'p6{mode}20', 'rlock', fmt)}<br>"
                    f"200 waiters: {self.cell(f'p6{mode}200', 'rlock', fmt)}")
            if mode == "fair":
                target = "O(1) commands per handoff: 200 waiters <= 1.5x 20 waiters"
                ok = None if small is None or big is None else big[1] <= 1.5 * small[1]
                verdict = self.verdict("P6 --fair", [("O(1) commands per handoff", ok)])
            else:
                target = "(none; compare with --fair)"
                verdict = "-"
            rows.append([f"P6 {label}: handoff p50; commands per handoff"]
                        + rlock_only(f"p6{mode}20", cell) + [target, verdict])
        return rows

    def table(self):
        header = ["metric", *TOOLS, "target", "rlock meets"]
        return markdown_table(header, self.rows())

    # Issue #14's section: kinds of lock --------------------------------------
    def kind_ratios(self, key, value, metric, index=None):
        parts = []
        for base in KIND_BASES[key]:
            other = self.num(metric, base, index)
            if other:
                parts.append(f"{value / other:.2f}x {KIND_LABELS[base][0]}")
        return f" ({', '.join(parts)})" if parts else ""

    def kinds_table(self):
        """The kinds' P1 and P3 side by side, or None when neither ran."""
        if "p3kinds" not in self.r and not any(
                k in self.r.get("p1", {}) for k in KIND_EXTRA):
            return None
        n = self.num

        def p1fmt_for(key):
            def fmt(v):
                text = f"{ms(v)} ms" + self.kind_ratios(key, v, "p1")
                c = n("p1cpu", key)
                if c is not None:
                    text += f"; CPU {ms(c)} ms" + self.kind_ratios(key, c, "p1cpu")
                return text
            return fmt

        def p3fmt_for(key):
            def fmt(v):
                text = f"{v[0]:.1f}" + self.kind_ratios(key, v[0], "p3kinds", 0)
                return text + (f"; {v[2]} runs failed" if v[2] else "")
            return fmt

        def most_fmt_for(key):
            allowed = {"rlock": 1, "rlock-limit": KIND_LIMIT, "flock": 1}.get(key)
            admits = f"admits {allowed}" if allowed else f"admits all {P3_WORKERS}"

            def fmt(v):
                if allowed and v[1] > allowed:
                    return f"**{v[1]}: more than the {allowed} admitted**"
                return f"{v[1]} ({admits})"
            return fmt

        rows = []
        for key in KINDS:
            label, command = KIND_LABELS[key]
            rows.append([label, command,
                         self.cell("p1", key, p1fmt_for(key)),
                         self.cell("p3kinds", key, p3fmt_for(key)),
                         self.cell("p3kinds", key, most_fmt_for(key))])
        header = ["lock", "command",
                  f"P1 uncontended `LOCK NAME true`, median of {P1_RUNS}",
                  f"P3 contended, {P3_WORKERS} x {P3_RUNS} runs of `LOCK NAME "
                  f"section.sh`: runs/s (median of {P3_ROUNDS})",
                  "P3: most holders inside at once"]
        return markdown_table(header, rows)


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines)


def first_line(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        return (done.stdout or done.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


def dpkg_version(package):
    return first_line(["dpkg-query", "-W", "-f=${Version}", package])


def machine_facts(args):
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
            mem = f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    debian = first_line(["cat", "/etc/debian_version"])
    return (f"{os.cpu_count()} CPUs ({model}), {mem} RAM, Linux {platform.release()}, "
            f"Debian {debian}. Versions: {first_line([args.rlock, '--version'])}; "
            f"flock util-linux {dpkg_version('util-linux')}; "
            f"etcd {dpkg_version('etcd-server')}; "
            f"redis-server {dpkg_version('redis-server')}; "
            f"redis-py {dpkg_version('python3-redis')} "
            f"({first_line(['/usr/bin/python3', '--version'])}); "
            f"bash {dpkg_version('bash')}.")


def write_results(args, bench, report, table, kinds, started, elapsed, load_start):
    date = started.strftime("%Y-%m-%d %H:%M UTC")
    load_end = os.getloadavg()[0]
    lines = [
        "# rlock benchmark results",
        "",
        f"Measured {date} by `make bench` (`bench/run`, {elapsed:.0f} s). "
        "What each row measures and why the targets are what they are: "
        "[README.md](README.md).",
        "",
        f"Machine: {machine_facts(args)} Load average (1 min) {load_start:.2f} "
        f"at the start, {load_end:.2f} at the end.",
        "",
        table,
        "",
        f"Every P1 number includes the harness's own spawn and wait: `true` alone "
        f"takes {ms(bench.bare_spawn)} ms; CPU is user+system time of the tool and "
        f"the children it waited for (`wait4`). "
        + (f"In P4, `sleep` alone peaks at {bench.sleep_rss:.1f} MiB. "
           if bench.sleep_rss else "")
        + "P5 and P6 count Redis "
        "`total_commands_processed`, which includes the commands a Lua script "
        "runs; in parentheses, the requests clients sent (MONITOR). etcd's P5 "
        "cell counts gRPC messages it received. rlock-sentinel is the same "
        "rlock with a `redis+sentinel://` URL, against a master, 2 replicas "
        "and 3 sentinels on this machine; rlock-cluster with a "
        "`redis+cluster://` URL naming all 6 nodes, against a Redis Cluster "
        "of 3 masters with 1 replica each. On both each acquire waits until "
        "one replica confirms it (WAIT 1, the default). rlock-redlock is "
        "rlock with `--url` given 5 times, against 5 independent masters "
        "(no replicas), quorum 3: each acquire sends the script to all 5 at "
        "once, then writes the highest fence back to every server that "
        "answered (a second round). The three are measured in P1 and P2 only and have no "
        "target of their own; rlock-sentinel's and rlock-redlock's ratios "
        "are to the single-server rlock and to flock, rlock-cluster's to "
        "the single-server rlock, to rlock-sentinel and to flock.",
        "",
    ]
    if report.missed:
        lines.append("Missed by rlock: " + "; ".join(report.missed) + ". Why, and what "
                     "would reach each: [README.md, Analysis](README.md#analysis).")
    else:
        lines.append("rlock met every target in this run.")
    lines.append("")
    if kinds is not None:
        lines += [
            "## Kinds of lock: --limit 3 and --shared next to a plain lock",
            "",
            kinds,
            "",
            "The same rlock binary and redis-server for the three rlock rows, "
            "each kind on a lock name of its own. P1 is taken with the table's "
            "P1 (the kinds take their turns with the other tools), so the "
            "plain rlock's and flock's cells are the table's. P3 here runs "
            "`section.sh` (the same two external commands as `critical.sh`, "
            "`mkdir` and `rmdir`, but on a directory of each holder's own and "
            "with no shared counter) instead of `critical.sh`, so its runs/s "
            "are not the table's P3. A plain lock and flock admit one holder "
            f"at a time, `--limit {KIND_LIMIT}` up to {KIND_LIMIT}, `--shared` "
            f"and `flock -s` all {P3_WORKERS} workers: what they gain in runs/s "
            "comes from holders running side by side, not from the same serialized "
            "work done faster, and is bounded by the CPUs the workers and "
            "their lock tools share. The last column counts the holders "
            "whose `section.sh` runs overlapped in time (so at most as many "
            "as held at once); more than a kind admits would be in bold.",
            "",
        ]
    with open(args.results, "w") as f:
        f.write("\n".join(lines))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rlock", required=True)
    parser.add_argument("--tmp", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--only", default="p1,p4,p2,p3,p5,p6")
    args = parser.parse_args()

    def stop(number, _frame):
        raise SystemExit(128 + number)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()[0]
    clock = time.monotonic()
    bench = Bench(args)
    bench.bare_spawn = 0.0
    bench.sleep_rss = 0.0
    try:
        for part in args.only.split(","):
            if part == "p6":
                bench.p6_status()
                bench.p6_herd()
            else:
                getattr(bench, part)()
    finally:
        for procs in ALL_PROCS:
            procs.kill_all(grace=2)
    report = Report(bench)
    table = report.table()
    print(table)
    kinds = report.kinds_table()
    if kinds is not None:
        print()
        print(kinds)
    write_results(args, bench, report, table, kinds, started,
                  time.monotonic() - clock, load_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())

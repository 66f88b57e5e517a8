#!/usr/bin/env python3
"""topology.py: the soak of rlock on Sentinel, Cluster and Redlock
(tests/soak/README.md, "The topology soak").

  topology.py run --topology sentinel|cluster|redlock --rlock BIN --dir DIR
                  [--seconds N] [--seed S] [--locker rlock|unsafe]
                  [--replicas default|0] [--workers N] [--selftest-seconds N]
                  [--no-faults] [--expect-violation]
  topology.py check DIR [--expect-violation]
                           re-read a finished phase's logs, print the verdict
  topology.py table DIR TOPOLOGY...
                           the figures of a topology-run directory, as a table

One run starts the topology (tests/lib/topology.bash, on 127.0.0.1 at free
ports), runs the planted unsafe locker on it first (DIR/selftest: the checker
must find an overlap), then the soak (DIR/soak): workers run rlock on two
NAMEs while a nemesis injects the topology's faults one at a time, waiting for
the topology to settle after each. It stops every process it started, by PID.
The checker reads only what the critical sections (cs.py) wrote, stamped with
CLOCK_BOOTTIME, and the exit statuses.

Exit status: 0 clean, 1 a violation (or a self-test that found no overlap),
2 a harness failure.
"""

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the tree
import soak  # noqa: E402  (the single-server soak: its log readers and detectors)

LIB = os.path.join(HERE, "..", "lib", "topology.bash")
NAMES = soak.NAMES
TTLS_MS = (2000, 3000, 4000, 6000)
RESTART_GRACE = "10s"  # the hold-back, on: at least the longest TTL
HANG_S = 120.0  # a run still going after this long is a hang
GRACE_S = 3.0  # a process of a run may outlive its rlock this long
LOST_SLACK_NS = 1_000_000_000  # a section stops within this of its `lost` event
COMPLETED_SLACK_NS = 500_000_000  # see check_exits()
SETTLE_S = 90  # a topology that has not settled after a fault: harness failure
GAP_S = (2.0, 5.0)  # the pause between faults, after the topology settled
FAULTS = {
    "sentinel": ("sentinel-failover", "master-kill", "master-stop", "replica-stop"),
    "cluster": ("master-kill", "cluster-failover", "master-stop"),
    "redlock": ("member-restart", "member-stop", "member-blackhole"),
}


def boot_ns():
    """CLOCK_BOOTTIME: cs.py's stamps (SOAK_CLOCK=boottime) and rlock's
    --events mono_ms are on it."""
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME)


class HarnessError(Exception):
    pass


# --- the topologies ------------------------------------------------------------------


class Topology:
    """Processes started by tests/lib/topology.bash in self.dir; every signal
    goes to a PID read from a pidfile and checked to run in its directory
    (so a recycled PID is never signalled), through a pidfd."""

    kind = "?"

    def __init__(self, d, rng):
        self.dir = d
        self.rng = rng
        self.stopped = set()  # ports we SIGSTOPped and not yet continued
        self.listeners = []  # black-hole sockets to close at teardown

    def bash(self, script, *args, timeout=SETTLE_S + 30):
        env = dict(os.environ, TOPOLOGY_DIRS=self.dir, RLOCK_REQUIRE_REDIS="1",
                   TOPOLOGY_START_TIMEOUT=str(SETTLE_S),
                   TOPOLOGY_FAILOVER_TIMEOUT=str(SETTLE_S))
        try:
            res = subprocess.run(["bash", "-c", f'source "$0"; {script}', LIB, *args],
                                 capture_output=True, text=True, timeout=timeout,
                                 env=env, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"{script.split()[0]} {' '.join(args)}: no answer "
                               f"within {timeout} s") from None
        if res.returncode != 0:
            raise HarnessError(f"{script.split()[0]} {' '.join(args)}: "
                               f"{res.stderr.strip()[-600:]}")
        return res.stdout.strip()

    def cli(self, port, *args, timeout=2.0):
        try:
            res = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args],
                                 capture_output=True, text=True, timeout=timeout,
                                 stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None
        return res.stdout.strip() if res.returncode == 0 else None

    def order(self, kind):
        try:
            with open(os.path.join(self.dir, kind + ".order")) as f:
                return [int(line.split("-")[-1]) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def sub(self, port):
        for kind in ("node", "sentinel", "cluster"):
            path = os.path.join(self.dir, f"{kind}-{port}")
            if os.path.isdir(path):
                return path, kind
        raise HarnessError(f"no process of ours was started on port {port}")

    def pid(self, port):
        """The PID running on port, or None."""
        path, kind = self.sub(port)
        try:
            with open(os.path.join(path, kind + ".pid")) as f:
                pid = int(f.read().strip())
            if os.path.samefile(f"/proc/{pid}/cwd", path):
                return pid
        except (OSError, ValueError):
            pass
        return None

    def send(self, port, signum):
        pid = self.pid(port)
        if pid is None:
            raise HarnessError(f"no process of ours runs on port {port}")
        fd = os.pidfd_open(pid)
        try:
            if not os.path.samefile(f"/proc/{pid}/cwd", self.sub(port)[0]):
                raise HarnessError(f"pid {pid} no longer runs on port {port}")
            signal.pidfd_send_signal(fd, signum)
        finally:
            os.close(fd)
        return pid

    def state(self, pid):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            return "X"
        return stat[stat.rindex(b")") + 2:][:1].decode()

    def wait_state(self, pid, want, seconds=5.0):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if want(self.state(pid)):
                return
            time.sleep(0.02)
        raise HarnessError(f"pid {pid} did not reach its state within {seconds} s")

    def freeze(self, port):
        pid = self.send(port, signal.SIGSTOP)
        self.stopped.add(port)
        self.wait_state(pid, lambda s: s in "Tt")

    def thaw(self, port):
        pid = self.send(port, signal.SIGCONT)
        self.stopped.discard(port)
        self.wait_state(pid, lambda s: s not in "Tt")

    def kill(self, port):
        pid = self.send(port, signal.SIGKILL)
        self.stopped.discard(port)
        self.wait_state(pid, lambda s: s in "ZX")
        path, kind = self.sub(port)
        # What a clean shutdown does: no stale PID is left to signal.
        try:
            os.unlink(os.path.join(path, kind + ".pid"))
        except FileNotFoundError:
            pass

    def restart(self, port):
        # The ports are in the kernel's ephemeral range: a connection from
        # anyone may hold a dead server's port as its own for a moment.
        for attempt in range(10):
            try:
                self.bash('topology_restart "$1"', str(port))
                return
            except HarnessError as err:
                if "is taken" not in str(err) or attempt == 9:
                    raise
            time.sleep(0.5)

    def blackhole(self, port):
        """A listener on port whose accept queue is full: a connect gets no
        answer (its SYN is dropped), as from a host that went silent."""
        lsock = socket.socket()
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for attempt in range(50):  # see restart(): the port may be held briefly
            try:
                lsock.bind(("127.0.0.1", port))
                break
            except OSError as err:
                if attempt == 49:
                    lsock.close()
                    raise HarnessError(f"black hole on {port}: {err}") from None
                time.sleep(0.1)
        lsock.listen(0)
        self.listeners.append(lsock)
        for _ in range(3):
            c = socket.socket()
            c.setblocking(False)
            c.connect_ex(("127.0.0.1", port))
            self.listeners.append(c)
        time.sleep(0.2)
        probe = socket.socket()
        probe.settimeout(0.5)
        try:
            probe.connect(("127.0.0.1", port))
            return "accept queue NOT full (a connect went through)"
        except OSError:
            return "connects hang"
        finally:
            probe.close()

    def unblackhole(self):
        for s in self.listeners:
            s.close()
        self.listeners = []

    def now(self):
        """What the roles are now, for the fault log."""
        return ""

    def all_ports(self):
        return [p for kind in ("node", "sentinel", "cluster") for p in self.order(kind)]

    def stop(self):
        """Stop everything we started: thaw what we froze, close the black
        holes, then topology_stop (TERM+CONT, then KILL, by pidfile)."""
        self.unblackhole()
        for port in list(self.stopped):
            try:
                self.thaw(port)
            except HarnessError:
                pass
        if os.path.isdir(self.dir):
            self.bash('topology_stop "$1"', self.dir, timeout=30)


class Sentinel(Topology):
    kind = "sentinel"

    def start(self):
        self.bash('sentinel_start "$1" 2 3', self.dir)
        sentinels = ",".join(f"127.0.0.1:{p}" for p in self.order("sentinel"))
        self.urls = [f"redis+sentinel://{sentinels}/mymaster"]

    def master(self):
        return int(self.bash('sentinel_master_port "$1"', self.dir))

    def now(self):
        return f"master {self.master()}"

    def unsafe_target(self, _name):
        return self.master()

    def settle(self):
        self.bash('sentinel_wait_ready "$1"', self.dir)

    def fault(self, kind):
        m = self.master()
        if kind == "sentinel-failover":
            s = self.rng.choice(self.order("sentinel"))
            out = self.cli(s, "sentinel", "failover", "mymaster")
            if out != "OK":
                raise HarnessError(f"SENTINEL FAILOVER on {s}: {out}")
            new = self.bash('sentinel_wait_failover "$1" "$2"', self.dir, str(m))
            return f"{m} -> {new} (asked sentinel {s})"
        if kind == "master-kill":
            self.kill(m)
            new = self.bash('sentinel_wait_failover "$1" "$2"', self.dir, str(m))
            # Back as a replica of the new master, empty.
            path, _ = self.sub(m)
            with open(os.path.join(path, "node.conf"), "a") as f:
                f.write(f"replicaof 127.0.0.1 {new}\n")
            self.restart(m)
            return f"{m} killed, {new} promoted, {m} back as its replica"
        replicas = [p for p in self.order("node") if p != m]
        port = m if kind == "master-stop" else self.rng.choice(replicas)
        d = self.rng.uniform(2.0, 4.0)
        self.freeze(port)
        try:
            time.sleep(d)
        finally:
            self.thaw(port)
        time.sleep(1.0)  # a failover the stop started shows by now
        return f"{port} stopped {d:.2f}s"


class Cluster(Topology):
    kind = "cluster"

    def start(self):
        self.bash('cluster_start "$1" 3 1', self.dir)
        nodes = ",".join(f"127.0.0.1:{p}" for p in self.order("cluster"))
        self.urls = [f"redis+cluster://{nodes}"]

    def running(self):
        return [p for p in self.order("cluster") if p not in self.stopped and self.pid(p)]

    def nodes(self):
        """[(port, id, flags, master_id, slots)] from a running node."""
        for port in self.running():
            out = self.cli(port, "cluster", "nodes")
            if out:
                rows = []
                for line in out.splitlines():
                    f = line.split()
                    addr = int(f[1].split("@")[0].rsplit(":", 1)[1])
                    rows.append((addr, f[0], f[2], f[3], f[8:]))
                return rows
        raise HarnessError("no cluster node answers CLUSTER NODES")

    def owner(self, name):
        slot = self.cli(self.running()[0], "cluster", "keyslot", name)
        return int(self.bash('cluster_node_for_slot "$1" "$2"', self.dir, slot))

    def unsafe_target(self, name):
        return self.owner(f"soak-unsafe:{{{name}}}")

    def now(self):
        return "masters " + " ".join(str(r[0]) for r in self.nodes()
                                     if "master" in r[2] and "fail" not in r[2])

    def settle(self):
        self.bash('cluster_wait_ok "$1"', self.dir)

    def target_master(self):
        """Mostly the master of a lock's slot: that is where faults matter."""
        if self.rng.random() < 0.75:
            return self.owner(self.rng.choice(NAMES))
        return self.rng.choice([r[0] for r in self.nodes()
                                if "master" in r[2] and "fail" not in r[2]])

    def fault(self, kind):
        m = self.target_master()
        if kind == "master-kill":
            new = self.bash('cluster_failover_by_kill "$1" "$2"', self.dir, str(m))
            self.restart(m)  # empty; its nodes.conf makes it a replica of new
            return f"{m} killed, {new} promoted, {m} back as its replica"
        if kind == "cluster-failover":
            mid = next(r[1] for r in self.nodes() if r[0] == m)
            replicas = [r[0] for r in self.nodes() if r[3] == mid and "fail" not in r[2]]
            if not replicas:
                raise HarnessError(f"master {m} has no replica for CLUSTER FAILOVER")
            r = self.rng.choice(replicas)
            out = self.cli(r, "cluster", "failover")
            if out != "OK":
                raise HarnessError(f"CLUSTER FAILOVER on {r}: {out}")
            deadline = time.monotonic() + SETTLE_S
            while not (self.cli(r, "role") or "").startswith("master"):
                if time.monotonic() > deadline:
                    raise HarnessError(f"{r} not master {SETTLE_S} s after CLUSTER FAILOVER")
                time.sleep(0.1)
            return f"{r} took over from {m}"
        # Long enough, mostly, for its replica to take over meanwhile
        # (cluster-node-timeout 1 s): it resumes as a zombie master.
        d = self.rng.uniform(3.0, 5.0)
        self.freeze(m)
        try:
            time.sleep(d)
        finally:
            self.thaw(m)
        time.sleep(1.0)
        return f"{m} stopped {d:.2f}s"


class Redlock(Topology):
    kind = "redlock"

    def start(self):
        self.bash('redlock_start "$1" 5', self.dir)
        self.urls = [f"redis://127.0.0.1:{p}/0" for p in self.order("node")]

    def unsafe_target(self, _name):
        return self.order("node")[0]

    def settle(self):
        deadline = time.monotonic() + SETTLE_S
        for port in self.order("node"):
            while self.cli(port, "ping") != "PONG":
                if time.monotonic() > deadline:
                    raise HarnessError(f"member {port} does not answer PING")
                time.sleep(0.1)

    def fault(self, kind):
        members = self.order("node")
        if kind == "member-blackhole":
            port = self.rng.choice(members)
            d = self.rng.uniform(2.0, 5.0)
            self.kill(port)
            try:
                how = self.blackhole(port)
                time.sleep(d)
            finally:
                self.unblackhole()
            self.restart(port)
            return f"{port} black-holed {d:.2f}s ({how}), then back empty"
        chosen = self.rng.sample(members, self.rng.choice([1, 2]))
        if kind == "member-restart":
            down = self.rng.uniform(0.0, 1.0)
            for port in chosen:
                self.kill(port)
            time.sleep(down)
            for port in chosen:
                self.restart(port)
            return f"{' '.join(map(str, chosen))} killed, back empty after {down:.2f}s"
        d = self.rng.uniform(1.0, 4.0)
        try:
            for port in chosen:
                self.freeze(port)
            time.sleep(d)
        finally:
            for port in chosen:
                if port in self.stopped:
                    self.thaw(port)
        return f"{' '.join(map(str, chosen))} stopped {d:.2f}s"


TOPOLOGIES = {"sentinel": Sentinel, "cluster": Cluster, "redlock": Redlock}


# --- one phase: workers (and the nemesis) on a started topology ------------------


class Phase:
    def __init__(self, args, topo, d, locker, seconds, faults, interrupted):
        self.args, self.topo, self.dir = args, topo, d
        self.locker, self.seconds, self.with_faults = locker, seconds, faults
        self.state = os.path.join(d, "state")
        for sub in ("state/markers", "state/logs", "runs"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        self.soak_id = f"topo-{os.getpid()}-{args.seed}-{os.path.basename(d)}"
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.interrupted = interrupted
        self.running = {}  # run -> {"proc", "pidfd"}
        self.ended = {}  # run -> monotonic time its locker was reaped
        self.outlived = []
        self.faults = []
        self.harness_errors = []
        self.fault_log = open(os.path.join(d, "faults.log"), "a", buffering=1)
        self.unsafe_ports = {}

    # workers

    def draw_run(self, rng):
        ttl = rng.choice(TTLS_MS)
        # Short, or (--long-share of them, half by default) long enough to
        # renew (up to 2.5 TTLs): the reviewers' overlaps needed long commands.
        long = rng.random() < self.args.long_share
        return {
            "name": rng.choice(NAMES),
            "ttl_ms": ttl,
            "mode": rng.choices(["w", "n"], [3, 1])[0],
            "wait_ms": rng.randrange(1000, 15000),
            "fair": rng.random() < 0.2,
            "long": long,
            "work_ms": (rng.randrange(int(ttl * 0.8), int(ttl * 2.5)) if long
                        else rng.randrange(20, 500)),
            "status": 3 if rng.random() < 0.1 else 0,
            "pause_ms": rng.randrange(0, 300),
        }

    def argv(self, spec, run):
        cs = [sys.executable, "-I", "-S", f"{HERE}/cs.py"]
        if self.locker == "unsafe":
            wait = spec["wait_ms"] if spec["mode"] == "w" else 0
            return [sys.executable, "-I", "-S", f"{HERE}/unsafe_lock.py", "127.0.0.1",
                    str(self.unsafe_ports[spec["name"]]), spec["name"],
                    str(spec["ttl_ms"]), str(wait), *cs]
        opts = []
        for url in self.topo.urls:
            opts += ["--url", url]
        opts += ["-t", f"{spec['ttl_ms']}ms",
                 "--events", os.path.join(self.dir, "runs", run + ".events")]
        opts += ["-w", f"{spec['wait_ms']}ms"] if spec["mode"] == "w" else ["-n"]
        if spec["fair"] and self.topo.kind != "redlock":  # no --fair with a quorum
            opts.append("--fair")
        if self.args.replicas != "default":
            opts += ["--replicas", self.args.replicas]
        return [self.args.rlock, *opts, spec["name"], *cs]

    def run_env(self, spec, run):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("RLOCK_") and k != "REDIS_URL"}
        env.update({
            "SOAK_ID": self.soak_id, "SOAK_RUN": run, "SOAK_STATE": self.state,
            "SOAK_NAME": spec["name"], "SOAK_WORK_MS": str(spec["work_ms"]),
            "SOAK_HB": "none", "SOAK_HB_MS": "0", "SOAK_STATUS": str(spec["status"]),
            "SOAK_CLOCK": "boottime", "RLOCK_RESTART_GRACE": RESTART_GRACE,
        })
        return env

    def worker(self, index):
        rng = random.Random(f"{self.args.seed}-{self.locker}-worker-{index}")
        seq = 0
        while not self.stop.is_set():
            spec = self.draw_run(rng)
            seq += 1
            run = f"w{index}-{seq:05d}"
            spec["run"] = run
            spec["argv"] = self.argv(spec, run)
            with open(os.path.join(self.dir, "runs", run + ".out"), "w") as out:
                proc = subprocess.Popen(spec["argv"], env=self.run_env(spec, run),
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                        start_new_session=True)
            spec["start_ns"] = boot_ns()
            entry = {"proc": proc, "pidfd": os.pidfd_open(proc.pid)}
            with self.lock:
                self.running[run] = entry
            try:
                status = proc.wait(timeout=HANG_S)
                spec["hang"] = False
            except subprocess.TimeoutExpired:
                spec["hang"] = True
                proc.kill()
                status = proc.wait()
            spec["end_ns"] = boot_ns()
            with self.lock:
                del self.running[run]
                os.close(entry["pidfd"])
                self.ended[run] = time.monotonic()
                spec["stopped_at_end"] = entry.get("stopped_at_end", False)
            spec["status_rc"] = status
            with open(os.path.join(self.dir, "runs", run + ".json"), "w") as f:
                json.dump(spec, f)
            self.stop.wait(spec["pause_ms"] / 1000)

    # nemesis: one fault at a time, each kind in turn (a seeded order), the
    # topology settled before the next

    def nemesis(self):
        rng = random.Random(f"{self.args.seed}-nemesis")
        self.topo.rng = random.Random(f"{self.args.seed}-faults")
        kinds = self.args.kinds
        queue = []
        while not self.stop.wait(rng.uniform(*GAP_S)):
            if not queue:
                queue = rng.sample(kinds, len(kinds))
            kind = queue.pop(0)
            t0 = boot_ns()
            self.fault_log.write(f"{t0} {kind} start\n")
            detail = self.topo.fault(kind)
            t1 = boot_ns()
            self.topo.settle()
            t2 = boot_ns()
            now = self.topo.now()
            self.faults.append({"kind": kind, "start_ns": t0, "end_ns": t1,
                                "settled_ns": t2, "detail": detail, "after": now})
            self.fault_log.write(f"{t1} {kind} done {detail}; settled in "
                                 f"{(t2 - t1) / 1e9:.1f}s{'; ' + now if now else ''}\n")

    def guard(self, fn, *args):
        try:
            fn(*args)
        except Exception as err:  # a broken harness must fail the soak
            self.harness_errors.append(f"{fn.__name__}: {err}")
            self.stop.set()

    # monitor: processes of a run that outlive its rlock

    def ours(self):
        found = {}
        tag = f"SOAK_ID={self.soak_id}".encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    env = f.read().split(b"\0")
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if tag not in env or stat[stat.rindex(b")") + 2:][:1] in b"ZX":
                continue
            run = next((v[9:].decode() for v in env if v.startswith(b"SOAK_RUN=")), "?")
            found[int(entry)] = run
        return found

    def scan(self, final=False):
        t = time.monotonic()
        for pid, run in self.ours().items():
            with self.lock:
                ended = self.ended.get(run)
            if ended is None or (t - ended < GRACE_S and not final):
                continue
            self.outlived.append({"run": run, "pid": pid, "after_s": round(t - ended, 2)})
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            try:
                if pid in self.ours():
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
            finally:
                os.close(fd)

    def monitor(self):
        while not self.stop.wait(0.5):
            self.scan()

    def drain(self):
        """Let the runs in flight end (they are bounded by -w and the work);
        TERM, then KILL, those that do not within 40 s."""
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and not self.interrupted.is_set():
            with self.lock:
                if not self.running:
                    return
            time.sleep(0.1)
        for signum, pause in ((signal.SIGTERM, 5), (signal.SIGKILL, 2)):
            with self.lock:
                for entry in self.running.values():
                    entry["stopped_at_end"] = True
                    for s in (signal.SIGCONT, signum):
                        try:
                            signal.pidfd_send_signal(entry["pidfd"], s)
                        except ProcessLookupError:
                            pass
            deadline = time.monotonic() + pause
            while time.monotonic() < deadline and self.running:
                time.sleep(0.1)

    def run(self):
        start_ns = boot_ns()
        start = time.monotonic()
        if self.locker == "unsafe":
            self.unsafe_ports = {n: self.topo.unsafe_target(n) for n in NAMES}
        workers = [threading.Thread(target=self.guard, args=(self.worker, i))
                   for i in range(self.args.workers)]
        helpers = [threading.Thread(target=self.monitor, daemon=True)]
        nemesis = None
        if self.with_faults:
            nemesis = threading.Thread(target=self.guard, args=(self.nemesis,))
        try:
            for t in workers + helpers + ([nemesis] if nemesis else []):
                t.start()
            deadline = time.monotonic() + self.seconds
            while time.monotonic() < deadline and not self.stop.is_set():
                if self.interrupted.wait(0.2):
                    self.harness_errors.append("interrupted")
                    break
            self.stop.set()
            if nemesis:
                # A fault in progress ends (thaw, restart) and settles first.
                nemesis.join(SETTLE_S * 2 + 60)
                if nemesis.is_alive():
                    self.harness_errors.append("the nemesis did not finish its fault")
            self.drain()
            for t in workers:
                t.join(30)
            time.sleep(GRACE_S)
            self.scan(final=True)
        finally:
            self.stop.set()
            self.fault_log.close()
        meta = {"topology": self.topo.kind, "seed": self.args.seed, "locker": self.locker,
                "replicas": self.args.replicas, "rlock": self.args.rlock,
                "seconds": round(time.monotonic() - start, 1), "start_ns": start_ns,
                "faults": self.faults, "harness_errors": self.harness_errors,
                "outlived": self.outlived, "urls": self.topo.urls,
                "load": os.getloadavg()}
        with open(os.path.join(self.dir, "meta.json"), "w") as f:
            json.dump(meta, f)


# --- the checker ---------------------------------------------------------------------


def lost_at(d, run):
    """mono_ms of the run's `lost` event (CLOCK_BOOTTIME), and the events
    after it other than `released`."""
    try:
        with open(os.path.join(d, "runs", run + ".events")) as f:
            events = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return None, []
    names = [e.get("event") for e in events]
    if "lost" not in names:
        return None, []
    i = names.index("lost")
    return events[i].get("mono_ms"), [n for n in names[i + 1:] if n != "released"]


def read_lines(d):
    """{run: [(kind, t, fields)]} from the critical sections' logs."""
    lines = {}
    for name in NAMES:
        path = os.path.join(d, "state", "logs", name + ".log")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 4:
                    lines.setdefault(parts[1], []).append((parts[0], int(parts[3]), parts[4:]))
    return lines


def check_exits(d, runs, per_name, replicas):
    """The exit statuses against what the critical sections wrote.

    An exit 70 for a section that completed is wrong when the section's exit
    line comes COMPLETED_SLACK_NS or more before rlock's `lost` event (or
    there is none): the lock outlived the command (issue #27 item 4). Closer
    than that it is a race that this log cannot judge (cs.py stamps its exit
    line before the interpreter exits, and rlock may decide meanwhile); with
    --replicas 0 a failover may really take the lock away during a command
    that then completes, and 70 is true. Those are only counted."""
    cs = {run: r for rs in per_name.values() for run, r in rs.items()}
    lines = read_lines(d)
    codes, wrong, other, completed_70 = Counter(), [], [], []
    for run, spec in sorted(runs.items()):
        rc, planned = spec["status_rc"], spec["status"]
        if spec.get("stopped_at_end"):
            codes["stopped at the end"] += 1
            continue
        if spec.get("hang"):
            other.append(f"{run}: still running after {HANG_S:.0f} s (killed)")
            codes["hang"] += 1
            continue
        codes[soak.status_name(rc)] += 1
        r = cs.get(run)
        entered = r is not None and "enter" in r
        status = r.get("exit") if r else None
        completed = status == planned
        mono_ms, after = lost_at(d, run)
        if rc == 70:
            end = max((t for kind, t, _ in lines.get(run, []) if kind == "exit"), default=None)
            lead = None if mono_ms is None or end is None else mono_ms * 1_000_000 - end
            if entered and completed and (lead is None or lead >= 0):
                text = (f"{run}: exit 70 (lost), but its section completed (status {status}, "
                        "not cut)" + ("" if lead is None else
                                      f" {lead / 1e6:.0f} ms before rlock said lost"))
                judged = replicas != "0" and (lead is None or lead >= COMPLETED_SLACK_NS)
                (wrong if judged else completed_70).append(text)
        elif rc in (69, 75):
            if entered:
                wrong.append(f"{run}: exit {rc} ({'unavailable' if rc == 69 else 'busy'}), "
                             f"but its section ran")
        elif rc == planned:
            if not entered:
                wrong.append(f"{run}: exit {rc}, but its section never ran")
            elif not completed:
                wrong.append(f"{run}: exit {rc}, but its section was cut "
                             f"({'no exit line' if status is None else f'status {status}'})")
        else:
            wrong.append(f"{run}: exit {soak.status_name(rc)}, not the command's "
                         f"{planned}, 69, 70 or 75")
        if after:
            other.append(f"{run}: events {', '.join(after)} after lost")
        own = lines.get(run, [])
        if mono_ms is not None:
            limit = mono_ms * 1_000_000 + LOST_SLACK_NS
            late = [t for kind, t, _ in own if kind == "tick" and t > limit]
            if late:
                other.append(f"{run}: its section worked {(max(late) - limit) / 1e6 + 1000:.0f}"
                             f" ms after rlock said the lock was lost")
        late = [t for _k, t, _f in own if t > spec["end_ns"]]
        if late:
            other.append(f"{run}: its section wrote {(max(late) - spec['end_ns']) / 1e6:.0f}"
                         f" ms after its locker exited")
    return codes, wrong, other, completed_70


def longest_gap(per_name, start_ns, faults):
    """The longest time with no holder of a NAME, between two sections, and
    the last fault that began before it."""
    best = (0, None, None)
    for name, runs in per_name.items():
        spans = sorted((r["first"], r["last"]) for r in runs.values() if "enter" in r)
        end = None
        for first, last in spans:
            if end is not None and first - end > best[0]:
                best = (first - end, name, end)
            end = last if end is None else max(end, last)
    gap, name, at = best
    if name is None:
        return 0.0, "no two sections"
    before = [f for f in faults if f["start_ns"] <= at + gap]
    cause = ""
    if before:
        lead = (at - before[-1]["start_ns"]) / 1e9
        cause = (f"; the last fault before its end: {before[-1]['kind']} "
                 f"({before[-1]['detail']}), {abs(lead):.1f}s "
                 f"{'before' if lead >= 0 else 'after'} the gap began")
    return gap / 1e9, f"{name} at +{(at - start_ns) / 1e9:.1f}s{cause}"


def interval_overlaps(per_name):
    """soak.py's detector, saying how long the two sections overlapped: from
    the second one's first line to the first of their last lines."""
    found = []
    for name, runs in per_name.items():
        order = sorted((r["first"], run) for run, r in runs.items())
        best_last, best_run = None, None
        for first, run in order:
            last = runs[run]["last"]
            if best_last is not None and first < best_last:
                found.append(f"{name}: {run} entered while {best_run} ran: two holders "
                             f"for {(min(last, best_last) - first) / 1e6:.0f} ms")
            if best_last is None or last > best_last:
                best_last, best_run = last, run
    return found


def overlaps_by_fault(intervals, per_name, faults):
    """How many overlaps came after each kind of fault: the fault that began
    last before the second section entered ("none" before the first)."""
    found = Counter()
    for item in intervals:
        name, rest = item.split(": ", 1)
        first = per_name[name][rest.split()[0]]["first"]
        before = [f for f in faults if f["start_ns"] <= first]
        found[before[-1]["kind"] if before else "none"] += 1
    return dict(found)


def check(d, expect_violation=False):
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    runs = soak.load_runs(d)
    per_name, marker = soak.read_logs(d)
    sections = sum(1 for rs in per_name.values() for r in rs.values() if "enter" in r)
    long_sections = sum(1 for run, s in runs.items() if s.get("long")
                        and any("enter" in rs.get(run, {}) for rs in per_name.values()))
    intervals = interval_overlaps(per_name)
    fences = soak.fence_regressions(per_name)
    codes, wrong, other, completed_70 = check_exits(d, runs, per_name, meta["replicas"])
    other += [f"{o['run']}: pid {o['pid']} alive {o['after_s']} s after its locker exited"
              for o in meta["outlived"]]
    gap_s, gap_where = longest_gap(per_name, meta["start_ns"], meta["faults"])
    faults = Counter(f["kind"] for f in meta["faults"])
    after = overlaps_by_fault(intervals, per_name, meta["faults"])
    longest_ms = max((int(i.rsplit(" ", 2)[1]) for i in intervals), default=0)
    violations = {"overlap (intervals)": intervals, "overlap (marker)": marker,
                  "fence inversion": fences, "wrong exit code": wrong,
                  "other (lost, outlived, hang)": other}
    total = sum(len(v) for v in violations.values())
    harness = list(meta["harness_errors"])
    if sections == 0:
        harness.append("no critical section ran: nothing was tested")
    summary = {
        "topology": meta["topology"], "locker": meta["locker"], "replicas": meta["replicas"],
        "seed": meta["seed"], "seconds": meta["seconds"], "faults": dict(faults),
        "runs": len(runs), "sections": sections, "long_sections": long_sections,
        "overlaps": len(intervals), "longest_overlap_ms": longest_ms,
        "overlaps_after": after, "marker_overlaps": len(marker),
        "fence_inversions": len(fences), "wrong_exit_codes": len(wrong),
        "other": len(other), "completed_70": len(completed_70),
        "longest_gap_s": round(gap_s, 2), "gap_where": gap_where,
        "exit_codes": dict(codes), "load": meta.get("load"), "violations": total,
        "harness_errors": harness,
    }
    load = meta.get("load") or [0, 0, 0]
    lines = [
        f"== topology soak: {meta['topology']} locker={meta['locker']} "
        f"replicas={meta['replicas']} SEED={meta['seed']} duration={meta['seconds']}s "
        f"(load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end)",
        "faults: " + (", ".join(f"{k} {v}" for k, v in sorted(faults.items())) or "none"),
        f"runs: {len(runs)}; sections run: {sections} ({long_sections} long enough to renew)",
        "exit codes: " + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items())),
        f"overlaps: {len(intervals)} (marker: {len(marker)}; the longest "
        f"{longest_ms} ms); fence inversions: "
        f"{len(fences)}; wrong exit codes: {len(wrong)}; other: {len(other)}",
        *([("overlaps after each kind of fault (the last one before the second "
            "entered): " + ", ".join(f"{k} {v}" for k, v in sorted(after.items())))]
          if after else []),
        *([f"exit 70 for a section that completed, not judged: {len(completed_70)} "
            "(with --replicas 0, or within 0.5 s of rlock's lost event)"]
          if completed_70 else []),
        f"longest gap with no holder: {gap_s:.1f}s ({gap_where})",
        f"violations: {total}",
    ]
    for kind, items in violations.items():
        if items:
            lines.append(f"  {kind}: {len(items)}")
            lines += [f"    {item}" for item in items[:3]]
            if len(items) > 3:
                lines.append(f"    ... {len(items) - 3} more")
    for err in harness:
        lines.append("HARNESS FAILURE: " + err)
    lines.append(f"logs: {d}")
    if harness:
        verdict, rc = "FAILED (harness)", 2
    elif expect_violation:
        verdict, rc = (("PASSED: the checker caught the unsafe locker", 0)
                       if intervals or marker
                       else ("FAILED: no overlap found for the unsafe locker", 1))
    else:
        verdict, rc = ("PASSED", 0) if total == 0 else ("FAILED (violations)", 1)
    lines.append(f"verdict: {verdict}")
    summary["verdict"] = rc
    with open(os.path.join(d, "violations.json"), "w") as f:
        json.dump(violations, f, indent=1)
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print("\n".join(lines), flush=True)
    return rc


def table(d, topologies):
    """One line per topology from the kept summaries (a Markdown table)."""
    rows = ["| topology | replicas | seconds | faults injected | sections run (long) | "
            "overlaps | fence inversions | wrong exit codes | other | longest gap |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for t in topologies:
        path = os.path.join(d, t, "soak", "summary.json")
        if not os.path.exists(path):
            rows.append(f"| {t} | | | (no summary: the run did not finish) | | | | | | |")
            continue
        with open(path) as f:
            s = json.load(f)
        faults = ", ".join(f"{k} {v}" for k, v in sorted(s["faults"].items())) or "none"
        rows.append(f"| {t} | {s['replicas']} | {s['seconds']:.0f} | {faults} | "
                    f"{s['sections']} ({s['long_sections']}) | {s['overlaps']}"
                    + (f" (up to {s['longest_overlap_ms'] / 1000:.1f}s)" if s["overlaps"] else "")
                    + " | "
                    f"{s['fence_inversions']} | {s['wrong_exit_codes']} | {s['other']} | "
                    f"{s['longest_gap_s']:.1f}s |")
    print("\n".join(rows), flush=True)
    return 0


# --- main ----------------------------------------------------------------------------


def run(args):
    interrupted = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda *_: interrupted.set())
    os.makedirs(args.dir, exist_ok=True)
    topo = TOPOLOGIES[args.topology](os.path.join(args.dir, "topology"),
                                     random.Random(f"{args.seed}-faults"))
    print(f"topology soak: {args.topology} SEED={args.seed} seconds={args.seconds} "
          f"locker={args.locker} replicas={args.replicas} dir={args.dir}", flush=True)
    try:
        try:
            topo.start()
        except HarnessError as err:
            print(f"HARNESS FAILURE: the {args.topology} topology did not start: {err}",
                  flush=True)
            return 2
        if args.selftest_seconds > 0:
            print(f"topology soak: self-test: the unsafe locker on {args.topology} "
                  "must show an overlap", flush=True)
            Phase(args, topo, os.path.join(args.dir, "selftest"), "unsafe",
                  args.selftest_seconds, False, interrupted).run()
            rc = check(os.path.join(args.dir, "selftest"), expect_violation=True)
            if rc != 0:
                print("topology soak: the self-test failed: the checker cannot be "
                      "trusted; no soak run", flush=True)
                return rc
            topo.settle()
        Phase(args, topo, os.path.join(args.dir, "soak"), args.locker, args.seconds,
              args.faults, interrupted).run()
    except HarnessError as err:
        print(f"HARNESS FAILURE: {err}", flush=True)
        return 2
    finally:
        try:
            topo.stop()
        except HarnessError as err:
            print(f"HARNESS FAILURE: stopping the topology: {err}", flush=True)
            return 2
    return check(os.path.join(args.dir, "soak"),
                 expect_violation=args.locker == "unsafe")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--topology", choices=sorted(TOPOLOGIES), required=True)
    r.add_argument("--rlock", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--seconds", type=float, default=300)
    r.add_argument("--seed", type=int, default=None)
    r.add_argument("--locker", choices=["rlock", "unsafe"], default="rlock")
    r.add_argument("--replicas", choices=["default", "0"], default="default")
    r.add_argument("--workers", type=int, default=5)
    r.add_argument("--selftest-seconds", type=float, default=15)
    r.add_argument("--long-share", type=float, default=0.5,
                   help="the share of runs whose command is long enough to renew")
    r.add_argument("--no-faults", dest="faults", action="store_false")
    r.add_argument("--faults", dest="kinds", default="",
                   help="the fault kinds to draw from, comma-separated (default all "
                        "of the topology's)")
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("--expect-violation", action="store_true")
    tb = sub.add_parser("table")
    tb.add_argument("dir")
    tb.add_argument("topologies", nargs="+")
    args = parser.parse_args()
    if args.cmd == "table":
        return table(args.dir, args.topologies)
    if args.cmd == "check":
        return check(args.dir, args.expect_violation)
    known = FAULTS[args.topology]
    args.kinds = [k for k in args.kinds.split(",") if k] or list(known)
    if set(args.kinds) - set(known):
        print(f"topology.py: --faults: {args.topology} has the kinds {','.join(known)}, "
              f"not {','.join(sorted(set(args.kinds) - set(known)))}", file=sys.stderr)
        return 64
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 10**9)
    args.rlock = os.path.abspath(args.rlock)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

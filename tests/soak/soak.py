#!/usr/bin/env python3
"""soak.py: rlock's randomized fault-injection soak (tests/soak/README.md).

  soak.py run --rlock BIN --dir DIR [--seconds N] [--seed S] [--locker rlock|unsafe]
              [--workers N] [--expect-violation]
  soak.py check DIR        re-read the logs of a finished run and print the verdict
  soak.py probe DIR        check that the outlived-process detector fires

Workers run the locker on two NAMEs with options drawn from the seed; a
nemesis injects faults at seeded times; a monitor looks for processes that
outlive their run; the checker reads what the critical section (cs.py) wrote.
Exit status: 0 clean, 1 a violation (or, with --expect-violation, none found),
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
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ("soak-a", "soak-b")
TTLS_MS = (1000, 1500, 2000, 3000)
RESTART_GRACE = "5s"  # >= the longest TTL: see README.md
GRACE_S = 3.0  # a descendant may outlive its rlock this long (watchdog)
HANG_S = 90.0  # a run still going after this long is a hang
FAULT_MEAN_S = 1.2
SRV_ADDR, CLI_ADDR = "10.213.0.5", "10.213.0.6"  # a /30 of our own
FAULT_KINDS = ("redis-stop", "redis-restart", "rlock-stop", "rlock-kill", "rlock-signal",
               "proxy-latency", "proxy-freeze", "proxy-reset", "link-cut")
SIGNALS = {"TERM": signal.SIGTERM, "INT": signal.SIGINT, "HUP": signal.SIGHUP,
           "USR1": signal.SIGUSR1}


def now_ns():
    return time.time_ns()


class HarnessError(Exception):
    pass


def free_port(taken):
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(20000, 61000)
        if port in taken or port in (6379, 26379):
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        taken.add(port)
        return port
    raise HarnessError("no free port in 20000-60999")


class Soak:
    def __init__(self, args):
        self.args = args
        self.dir = args.dir
        self.state = os.path.join(self.dir, "state")
        for sub in ("state/markers", "state/logs", "runs", "redis", "certs"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self.soak_id = f"{os.getpid()}-{args.seed}"
        self.lock = threading.Lock()
        self.redis_lock = threading.Lock()
        self.proxy_lock = threading.Lock()
        self.link_lock = threading.Lock()
        self.stop = threading.Event()
        self.running = {}  # run id -> {"proc", "signals": [...]}
        self.ended = {}  # run id -> monotonic time its locker was reaped
        self.outlived = []
        self.faults = Counter()
        self.skipped = Counter()
        self.notes = []
        self.harness_errors = []
        self.run_count = 0
        self.events = open(os.path.join(self.dir, "faults.log"), "a", buffering=1)
        self.redis = None
        self.proxy = None
        self.forwarder = None
        self.netns = None
        self.control = os.path.join(self.dir, "proxy.control")
        self.control_state = [0.0, 0, 0]
        self.ports = set()

    # --- servers ----------------------------------------------------------

    def make_certs(self):
        certs = os.path.join(self.dir, "certs")
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": certs}
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        steps = [
            ["openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "2", "-subj", "/CN=rlock soak ca"],
            ["openssl", "req", *ec, "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=rlock soak server"],
            ["openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey",
             "ca.key", "-CAcreateserial", "-out", "server.crt", "-days", "2",
             "-extfile", "server.ext"],
        ]
        with open(os.path.join(certs, "server.ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        for step in steps:
            if subprocess.call(step, **quiet) != 0:
                raise HarnessError("openssl failed: " + " ".join(step[:3]))
        self.certs = certs

    def redis_args(self):
        d = os.path.join(self.dir, "redis")
        c = self.certs
        return ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port),
                "--unixsocket", os.path.join(d, "redis.sock"), "--unixsocketperm", "700",
                "--save", "", "--appendonly", "no", "--dir", d,
                "--logfile", os.path.join(d, "redis.log"),
                "--tls-port", str(self.tls_port), "--tls-cert-file", f"{c}/server.crt",
                "--tls-key-file", f"{c}/server.key", "--tls-ca-cert-file", f"{c}/ca.crt",
                "--tls-auth-clients", "no"]

    def redis_ping(self):
        sock = os.path.join(self.dir, "redis", "redis.sock")
        try:
            out = subprocess.run(["redis-cli", "-s", sock, "ping"], capture_output=True,
                                 text=True, timeout=2).stdout
        except subprocess.TimeoutExpired:
            return False
        return out.strip() == "PONG"

    def start_redis(self):
        self.redis = subprocess.Popen(self.redis_args(), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.redis.poll() is not None:
                raise HarnessError(f"redis-server exited {self.redis.returncode} at start "
                                   f"(see {self.dir}/redis/redis.log)")
            if self.redis_ping():
                return
            time.sleep(0.05)
        raise HarnessError("redis-server did not answer within 10 s")

    def start_relay(self, argv, what):
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True, text=True)
        if not proc.stdout.readline().startswith("ready"):
            raise HarnessError(f"{what} did not start")
        return proc

    def write_control(self):
        tmp = self.control + ".tmp"
        with open(tmp, "w") as f:
            f.write("%s %d %d\n" % tuple(self.control_state))
        os.rename(tmp, self.control)

    def ip(self, *args, check=True):
        res = subprocess.run(["ip", *args], capture_output=True, text=True)
        if check and res.returncode != 0:
            raise OSError(res.stderr.strip() or f"ip {' '.join(args)} failed")
        return res

    def setup_netns(self):
        """Two namespaces of ours joined by a veth pair made inside them; a
        relay in the server side passes TCP to redis-server's unix socket."""
        base = f"rlksoak-{os.getpid()}"
        srv, cli = base + "-srv", base + "-cli"
        try:
            for ns in (srv, cli):
                self.ip("netns", "add", ns)
                self.netns_made = getattr(self, "netns_made", []) + [ns]
            self.ip("link", "add", "soak-srv", "netns", srv, "type", "veth",
                    "peer", "name", "soak-cli", "netns", cli)
            self.ip("-n", srv, "address", "add", SRV_ADDR + "/30", "dev", "soak-srv")
            self.ip("-n", cli, "address", "add", CLI_ADDR + "/30", "dev", "soak-cli")
            self.ip("-n", srv, "link", "set", "soak-srv", "up")
            self.ip("-n", cli, "link", "set", "soak-cli", "up")
            self.ip("-n", srv, "link", "set", "lo", "up")
        except (OSError, FileNotFoundError) as err:
            self.notes.append(f"network namespaces unavailable ({err}): "
                              "link-cut faults and netns runs skipped")
            self.netns = None
            return
        self.netns = (srv, cli)
        self.fwd_port = free_port(self.ports)
        sock = os.path.join(self.dir, "redis", "redis.sock")
        self.forwarder = self.start_relay(
            ["ip", "netns", "exec", srv, sys.executable, "-I", "-S", f"{HERE}/../lib/proxy.py",
             SRV_ADDR, str(self.fwd_port), "unix:" + sock, self.dir + "/forwarder.control"],
            "the netns relay")

    def setup(self):
        self.make_certs()
        self.redis_port = free_port(self.ports)
        self.tls_port = free_port(self.ports)
        self.proxy_port = free_port(self.ports)
        self.start_redis()
        self.write_control()
        self.proxy = self.start_relay(
            [sys.executable, "-I", "-S", f"{HERE}/../lib/proxy.py", "127.0.0.1",
             str(self.proxy_port), f"tcp:127.0.0.1:{self.redis_port}", self.control],
            "the proxy")
        if self.args.netns:
            self.setup_netns()
        else:
            self.notes.append("network namespaces disabled (--no-netns): link-cut "
                              "faults and netns runs skipped")

    # --- workers -------------------------------------------------------------

    def transports(self):
        kinds = ["tcp", "proxy"]
        if self.args.locker == "rlock":
            kinds.append("tls")
        if self.netns:
            kinds.append("netns")
        return kinds

    def draw_run(self, rng):
        """Everything about one run, drawn from the worker's generator."""
        ttl = rng.choice(TTLS_MS)
        spec = {
            "name": rng.choice(NAMES),
            "transport": rng.choice(self.transports()),
            "ttl_ms": ttl,
            "mode": rng.choices(["wait", "w", "n"], [5, 3, 2])[0],
            "wait_ms": rng.randrange(300, 5000),
            "fair": rng.random() < 0.3,
            "hold_ms": rng.randrange(200, 2000) if rng.random() < 0.15 else 0,
            "once_per_ms": rng.choice([2000, 3000, 5000]) if rng.random() < 0.1 else 0,
            # Mostly short work; sometimes longer than the lease (renewals).
            "work_ms": (rng.randrange(20, 300) if rng.random() < 0.7
                        else rng.randrange(300, int(ttl * 2.5))),
            "hb": rng.choices(["none", "setsid", "timeout"], [6, 2, 2])[0],
            "status": 3 if rng.random() < 0.1 else 0,
            "pause_ms": rng.randrange(0, 200),
        }
        # The work waits for the child: a long child is a long critical
        # section, and one that a killed rlock must not leave behind (F1).
        spec["hb_ms"] = rng.randrange(100, 6000)
        return spec

    def url_args(self, spec):
        t = spec["transport"]
        if t == "tcp":
            return ["--url", f"redis://127.0.0.1:{self.redis_port}"]
        if t == "proxy":
            return ["--url", f"redis://127.0.0.1:{self.proxy_port}"]
        if t == "tls":
            return ["--url", f"rediss://127.0.0.1:{self.tls_port}",
                    "--tls-ca", f"{self.certs}/ca.crt"]
        return ["--url", f"redis://{SRV_ADDR}:{self.fwd_port}"]

    def argv(self, spec, run):
        # -I -S: a short start, so that a forwarded signal rarely comes before
        # cs.py handles it (a signal during site import makes python exit 1).
        cs = [sys.executable, "-I", "-S", f"{HERE}/cs.py"]
        if self.args.locker == "unsafe":
            host, port = {"tcp": ("127.0.0.1", self.redis_port),
                          "proxy": ("127.0.0.1", self.proxy_port)}.get(
                spec["transport"], (SRV_ADDR, getattr(self, "fwd_port", 0)))
            wait = {"wait": -1, "w": spec["wait_ms"], "n": 0}[spec["mode"]]
            argv = [sys.executable, "-I", "-S", f"{HERE}/unsafe_lock.py", host,
                    str(port), spec["name"], str(spec["ttl_ms"]), str(wait), *cs]
        else:
            opts = [*self.url_args(spec), "-t", f"{spec['ttl_ms']}ms",
                    "--events", os.path.join(self.dir, "runs", run + ".events")]
            if spec["mode"] == "w":
                opts += ["-w", f"{spec['wait_ms']}ms"]
            elif spec["mode"] == "n":
                opts += ["-n"]
            if spec["fair"]:
                opts += ["--fair"]
            if spec["hold_ms"]:
                opts += ["--hold", f"{spec['hold_ms']}ms"]
            if spec["once_per_ms"]:
                opts += ["--once-per", f"{spec['once_per_ms']}ms"]
            argv = [self.args.rlock, *opts, spec["name"], *cs]
        if spec["transport"] == "netns":
            argv = ["ip", "netns", "exec", self.netns[1], *argv]
        return argv

    def run_env(self, spec, run):
        env = dict(os.environ)
        env.update({
            "SOAK_ID": self.soak_id, "SOAK_RUN": run, "SOAK_STATE": self.state,
            "SOAK_NAME": spec["name"], "SOAK_WORK_MS": str(spec["work_ms"]),
            "SOAK_HB": spec["hb"], "SOAK_HB_MS": str(spec["hb_ms"]),
            "SOAK_STATUS": str(spec["status"]), "RLOCK_RESTART_GRACE": RESTART_GRACE,
        })
        for var in ("RLOCK_URL", "RLOCK_PREFIX", "RLOCK_FENCE", "RLOCK_TOKEN"):
            env.pop(var, None)
        return env

    def worker(self, index):
        rng = random.Random(f"{self.args.seed}-worker-{index}")
        seq = 0
        while not self.stop.is_set():
            spec = self.draw_run(rng)
            seq += 1
            run = f"w{index}-{seq:05d}"
            spec["run"] = run
            spec["argv"] = self.argv(spec, run)
            out = open(os.path.join(self.dir, "runs", run + ".out"), "w")
            try:
                proc = subprocess.Popen(spec["argv"], env=self.run_env(spec, run),
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                        start_new_session=True)
            except OSError as err:
                self.harness_errors.append(f"cannot start {run}: {err}")
                self.stop.set()
                return
            finally:
                out.close()
            spec["start_ns"] = now_ns()
            # Signals go through a pidfd: it never names a recycled PID.
            entry = {"proc": proc, "signals": [], "pidfd": os.pidfd_open(proc.pid)}
            with self.lock:
                self.running[run] = entry
                self.run_count += 1
            try:
                status = proc.wait(timeout=HANG_S)
                spec["hang"] = False
            except subprocess.TimeoutExpired:
                spec["hang"] = True
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                status = proc.wait()
            spec["end_ns"] = now_ns()
            with self.lock:
                del self.running[run]
                os.close(entry["pidfd"])
                self.ended[run] = time.monotonic()
                spec["signals"] = entry["signals"]
                spec["stopped_at_end"] = entry.get("stopped_at_end", False)
            spec["status_rc"] = status
            with open(os.path.join(self.dir, "runs", run + ".json"), "w") as f:
                json.dump(spec, f)
            self.stop.wait(spec["pause_ms"] / 1000)

    # --- nemesis ---------------------------------------------------------------

    def record(self, kind, detail, done=True):
        if done:
            with self.lock:
                self.faults[kind] += 1
        self.events.write(f"{now_ns()} {kind} {'done' if done else 'skipped'} {detail}\n")

    def pick_running(self, rng):
        with self.lock:
            runs = sorted(self.running)
            if not runs:
                return None, None, None
            run = runs[rng.randrange(len(runs))]
            entry = self.running[run]
            return run, entry, os.dup(entry["pidfd"])

    def fault(self, kind, rng):
        """Run one fault; the draws happen before any waiting."""
        d = rng.uniform(0.2, 4.0)
        if kind == "redis-stop":
            with self.redis_lock:
                self.redis.send_signal(signal.SIGSTOP)
                self.record(kind, f"{d:.2f}s")
                time.sleep(d)
                self.redis.send_signal(signal.SIGCONT)
        elif kind == "redis-restart":
            down = rng.uniform(0.0, 1.0)
            with self.redis_lock:
                self.redis.send_signal(signal.SIGCONT)
                self.redis.kill()
                self.redis.wait()
                self.record(kind, f"down {down:.2f}s")
                time.sleep(down)
                try:
                    self.start_redis()
                except HarnessError as err:
                    self.harness_errors.append(f"restart: {err}")
                    self.stop.set()
        elif kind in ("rlock-stop", "rlock-kill", "rlock-signal"):
            name = rng.choice(list(SIGNALS))
            run, entry, pidfd = self.pick_running(rng)
            if run is None:
                self.record(kind, "no run", done=False)
                return
            try:
                if kind == "rlock-kill":
                    entry["signals"].append("KILL")
                    self._signal(pidfd, signal.SIGKILL)
                    self.record(kind, run)
                elif kind == "rlock-signal":
                    entry["signals"].append(name)
                    self._signal(pidfd, SIGNALS[name])
                    self.record(kind, f"{run} {name}")
                else:
                    entry["signals"].append("STOP")
                    self._signal(pidfd, signal.SIGSTOP)
                    self.record(kind, f"{run} {d:.2f}s")
                    self.stop.wait(d)
                    self._signal(pidfd, signal.SIGCONT)
            finally:
                os.close(pidfd)
        elif kind in ("proxy-latency", "proxy-freeze", "proxy-reset"):
            latency = rng.uniform(0.05, 0.8)
            with self.proxy_lock:
                if kind == "proxy-reset":
                    self.control_state[2] += 1
                    self.write_control()
                    self.record(kind, "")
                    return
                slot = 0 if kind == "proxy-latency" else 1
                self.control_state[slot] = round(latency, 3) if slot == 0 else 1
                self.write_control()
                self.record(kind, f"{d:.2f}s" + (f" {latency:.3f}s" if slot == 0 else ""))
                time.sleep(d)
                self.control_state[slot] = 0
                self.write_control()
        elif kind == "link-cut":
            if not self.netns:
                self.record(kind, "namespaces unavailable", done=False)
                return
            side = rng.choice([0, 1])
            ns, dev = self.netns[side], ("soak-srv", "soak-cli")[side]
            with self.link_lock:
                self.ip("-n", ns, "link", "set", dev, "down")
                self.record(kind, f"{dev} {d:.2f}s")
                time.sleep(d)
                self.ip("-n", ns, "link", "set", dev, "up")

    def _signal(self, pidfd, signum):
        try:
            signal.pidfd_send_signal(pidfd, signum)
        except ProcessLookupError:
            pass

    def signal_ours(self, pid, signum):
        """Signal pid found by ours(), if it still carries our id."""
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return
        try:
            if pid in self.ours(only=pid):
                self._signal(pidfd, signum)
        finally:
            os.close(pidfd)

    def nemesis(self):
        rng = random.Random(f"{self.args.seed}-nemesis")
        kinds = self.args.kinds
        threads = []
        while not self.stop.wait(rng.expovariate(1 / FAULT_MEAN_S)):
            kind = rng.choice(kinds)
            fault_rng = random.Random(rng.random())
            t = threading.Thread(target=self.guard, args=(self.fault, kind, fault_rng),
                                 daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join(10)

    def guard(self, fn, *args):
        try:
            fn(*args)
        except Exception as err:  # a broken harness must fail the soak
            self.harness_errors.append(f"{fn.__name__}{args[:1]}: {err!r}")
            self.stop.set()

    # --- monitor ---------------------------------------------------------------

    def ours(self, only=None):
        """{pid: run} of live processes whose environment carries our id."""
        found = {}
        tag = f"SOAK_ID={self.soak_id}".encode()
        for entry in [str(only)] if only else os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    env = f.read().split(b"\0")
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if tag not in env:
                continue
            if stat[stat.rindex(b")") + 2:][:1] in b"ZX":
                continue
            run = next((v[9:].decode() for v in env if v.startswith(b"SOAK_RUN=")), "?")
            found[int(entry)] = run
        return found

    def cmdline(self, pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            return "?"

    def scan(self, final=False):
        t = time.monotonic()
        for pid, run in self.ours().items():
            with self.lock:
                ended = self.ended.get(run)
            if ended is None or (t - ended < GRACE_S and not final):
                continue
            line = {"run": run, "pid": pid, "cmd": self.cmdline(pid),
                    "after_s": round(t - ended, 2), "t_ns": now_ns()}
            self.outlived.append(line)
            for signum in (signal.SIGCONT, signal.SIGKILL):
                self.signal_ours(pid, signum)

    def monitor(self):
        while not self.stop.wait(0.25):
            self.scan()

    # --- the run -----------------------------------------------------------------

    def drain(self):
        """Let the runs in flight end; stop those that do not."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with self.lock:
                if not self.running:
                    return
            time.sleep(0.1)
        # TERM first: rlock forwards it and the critical section stops its
        # children; a SIGKILL from us would be a fault that nobody counted.
        for signum, pause in ((signal.SIGTERM, 5), (signal.SIGKILL, 0)):
            with self.lock:
                for entry in self.running.values():
                    entry["stopped_at_end"] = True
                    self._signal(entry["pidfd"], signal.SIGCONT)
                    self._signal(entry["pidfd"], signum)
            deadline = time.monotonic() + pause
            while time.monotonic() < deadline and self.running:
                time.sleep(0.1)

    def run(self):
        print(f"soak: SEED={self.args.seed} seconds={self.args.seconds} "
              f"locker={self.args.locker} workers={self.args.workers} dir={self.dir}",
              flush=True)
        start = time.monotonic()
        try:
            self.setup()
            for note in self.notes:
                print("soak: note: " + note, flush=True)
            workers = [threading.Thread(target=self.guard, args=(self.worker, i))
                       for i in range(self.args.workers)]
            helpers = [threading.Thread(target=self.monitor, daemon=True)]
            if self.args.faults:
                helpers.append(threading.Thread(target=self.guard, args=(self.nemesis,)))
            for t in workers + helpers:
                t.start()
            self.stop.wait(self.args.seconds)
            self.stop.set()
            self.drain()
            for t in workers + helpers:
                t.join(30)
            time.sleep(GRACE_S)
            self.scan(final=True)
        except HarnessError as err:
            self.harness_errors.append(str(err))
        finally:
            self.stop.set()
            self.teardown()
        meta = {"seed": self.args.seed, "seconds": round(time.monotonic() - start, 1),
                "locker": self.args.locker, "faults": dict(self.faults),
                "notes": self.notes, "harness_errors": self.harness_errors,
                "outlived": self.outlived, "runs_started": self.run_count,
                "netns": bool(self.netns)}
        with open(os.path.join(self.dir, "meta.json"), "w") as f:
            json.dump(meta, f)
        return check(self.dir, self.args.expect_violation)

    def teardown(self):
        for pid in self.ours():
            for signum in (signal.SIGCONT, signal.SIGKILL):
                self.signal_ours(pid, signum)
        for proc in (self.redis, self.proxy, self.forwarder):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()
        for ns in getattr(self, "netns_made", []):
            self.ip("netns", "delete", ns, check=False)
        self.events.close()


# --- the checker -------------------------------------------------------------------


def read_logs(d):
    """{name: {run: {"first": t, "last": t, "enter": t, "fence": f, "exit": status,
    "hb_last": t}}} and the marker findings."""
    per_name, marker = {}, []
    for name in NAMES:
        runs = defaultdict(dict)
        path = os.path.join(d, "state", "logs", name + ".log")
        if not os.path.exists(path):
            per_name[name] = runs
            continue
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 4:
                    continue
                kind, run, t = parts[0], parts[1], int(parts[3])
                r = runs[run]
                r["first"] = min(r.get("first", t), t)
                r["last"] = max(r.get("last", t), t)
                if kind == "enter":
                    r["enter"], r["fence"] = t, parts[4]
                elif kind == "exit":
                    r["exit"] = int(parts[5])
                elif kind == "hb":
                    r["hb_last"] = max(r.get("hb_last", t), t)
                elif kind == "overlap":
                    marker.append(f"{name}: {run} found the marker of live {parts[4]} "
                                  f"(pid {parts[5]})")
        per_name[name] = runs
    return per_name, marker


def interval_overlaps(per_name):
    found = []
    for name, runs in per_name.items():
        order = sorted((r["first"], run) for run, r in runs.items())
        best_last, best_run = None, None
        for first, run in order:
            if best_last is not None and first < best_last:
                other = runs[best_run]
                how = ("out-of-group heartbeat" if other.get("hb_last") == best_last
                       else "critical section")
                found.append(f"{name}: {run} entered {(best_last - first) / 1e6:.1f} ms "
                             f"before the last sign of life of {best_run} ({how})")
            last = runs[run]["last"]
            if best_last is None or last > best_last:
                best_last, best_run = last, run
    return found


def fence_regressions(per_name):
    found = []
    for name, runs in per_name.items():
        prev = None
        for _t, run in sorted((r["enter"], run) for run, r in runs.items() if "enter" in r):
            fence = runs[run]["fence"]
            try:
                value = int(fence)
            except ValueError:
                found.append(f"{name}: {run} got no usable fence ({fence!r})")
                continue
            if prev is not None and value <= prev[1]:
                found.append(f"{name}: {run} got fence {value} after {prev[0]} got {prev[1]}")
            prev = (run, value)
    return found


def load_runs(d):
    runs = {}
    for entry in os.listdir(os.path.join(d, "runs")):
        if entry.endswith(".json"):
            with open(os.path.join(d, "runs", entry)) as f:
                spec = json.load(f)
            runs[spec["run"]] = spec
    return runs


def status_name(rc):
    return f"signal {-rc}" if rc < 0 else str(rc)


def event_order(d, run):
    """Events after `lost` other than `released`, for item 1 of issue #10."""
    path = os.path.join(d, "runs", run + ".events")
    try:
        with open(path) as f:
            names = [json.loads(line).get("event") for line in f if line.strip()]
    except (OSError, ValueError):
        return None
    if "lost" in names:
        after = [n for n in names[names.index("lost") + 1:] if n != "released"]
        if after:
            return f"{run}: events {', '.join(names)}: {', '.join(after)} after lost"
    return None


def python_start_interrupted(d, run):
    """The harness's own window: SIGINT reached cs.py while the interpreter
    was still starting (it exits 1 with a fatal error, not of the signal)."""
    try:
        with open(os.path.join(d, "runs", run + ".out"), errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    return "Fatal Python error" in text and "KeyboardInterrupt" in text


def check_runs(d, runs, per_name):
    codes, bad_status, killed_normal, hangs, events = Counter(), [], [], [], []
    cs = {run: r for rs in per_name.values() for run, r in rs.items()}
    for run, spec in sorted(runs.items()):
        rc = spec["status_rc"]
        if spec.get("stopped_at_end"):
            codes["stopped at the end"] += 1
            continue
        if spec.get("hang"):
            hangs.append(f"{run}: still running after {HANG_S:.0f} s "
                         f"(signals {spec['signals'] or 'none'})")
            codes["124 (hang, killed)"] += 1
            continue
        if rc == 1 and "INT" in spec["signals"] and python_start_interrupted(d, run):
            codes["1 (INT while python started)"] += 1
            continue
        codes[status_name(rc)] += 1
        expected = {0, spec["status"], 69, 70, 75}
        for sig in spec["signals"]:
            if sig == "STOP":
                continue
            signum = getattr(signal, "SIG" + sig)
            expected |= {128 + signum, -signum}
        if rc not in expected:
            bad_status.append(f"{run}: exit {status_name(rc)} "
                              f"(signals {spec['signals'] or 'none'})")
        r = cs.get(run)
        if (r is not None and "exit" not in r and rc in (0, spec["status"])
                and not [s for s in spec["signals"] if s != "STOP"]):
            killed_normal.append(f"{run}: its command was killed mid-way, "
                                 f"yet it exited {rc}")
        problem = event_order(d, run)
        if problem:
            events.append(problem)
    return codes, bad_status, killed_normal, hangs, events


def check(d, expect_violation=False):
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    runs = load_runs(d)
    per_name, marker = read_logs(d)
    entered = sum(1 for rs in per_name.values() for r in rs.values() if "enter" in r)
    codes, bad_status, killed_normal, hangs, events = check_runs(d, runs, per_name)
    violations = {
        "overlap (marker)": marker,
        "overlap (intervals)": interval_overlaps(per_name),
        "fence not increasing": fence_regressions(per_name),
        "outlived its rlock": [f"{o['run']}: pid {o['pid']} alive {o['after_s']} s after "
                               f"its locker exited: {o['cmd'][:80]}" for o in meta["outlived"]],
        "exit status unexpected": bad_status,
        "killed command reported normal": killed_normal,
        "event after lost": events,
        "hang": hangs,
    }
    harness = list(meta["harness_errors"])
    if entered == 0:
        harness.append("no critical section ran: nothing was tested")
    total = sum(len(v) for v in violations.values())
    lines = [
        f"== soak summary: SEED={meta['seed']} locker={meta['locker']} "
        f"duration={meta['seconds']}s",
        f"runs: {len(runs)} finished, {entered} entered the critical section",
        "faults: " + (", ".join(f"{k} {v}" for k, v in sorted(meta["faults"].items()))
                      or "none"),
    ]
    if not meta["netns"]:
        lines.append("faults: link-cut NOT DONE (network namespaces unavailable)")
    def by_number(item):
        head = item[0].split()
        number = head[1] if head[0] == "signal" else head[0]
        return (head[0] == "signal", int(number) if number.isdigit() else 999, item[0])

    lines.append("exit codes: " + ", ".join(f"{k}: {v}"
                                            for k, v in sorted(codes.items(), key=by_number)))
    lines.append(f"violations: {total}")
    for kind, items in violations.items():
        if items:
            lines.append(f"  {kind}: {len(items)}")
            lines += [f"    {item}" for item in items[:3]]
            if len(items) > 3:
                lines.append(f"    ... {len(items) - 3} more")
    for note in meta["notes"]:
        lines.append("note: " + note)
    for err in harness:
        lines.append("HARNESS FAILURE: " + err)
    lines.append(f"logs: {d}")
    with open(os.path.join(d, "violations.json"), "w") as f:
        json.dump(violations, f, indent=1)
    if harness:
        verdict, rc = "FAILED (harness)", 2
    elif expect_violation:
        overlaps = len(marker) + len(violations["overlap (intervals)"])
        verdict, rc = (("PASSED: the checker caught the unsafe locker", 0) if overlaps
                       else ("FAILED: no overlap found for the unsafe locker", 1))
    else:
        verdict, rc = ("PASSED", 0) if total == 0 else ("FAILED (violations)", 1)
    lines.append(f"verdict: {verdict}   (replay: SEED={meta['seed']})")
    print("\n".join(lines), flush=True)
    return rc


def probe(d):
    """Plant a process that outlives its locker (a `setsid -f` child of a
    locker that exits at once) and check that the monitor reports and kills
    it: the proof that the "outlived" detector can fire."""
    args = argparse.Namespace(dir=d, seed=0, locker="unsafe", netns=False)
    soak = Soak(args)
    run = "probe-00001"
    env = dict(os.environ, SOAK_ID=soak.soak_id, SOAK_RUN=run)
    subprocess.run(["sh", "-c", "setsid -f sleep 60 </dev/null >/dev/null 2>&1"],
                   env=env, check=True)
    soak.ended[run] = time.monotonic()
    soak.scan()
    early = list(soak.outlived)
    time.sleep(GRACE_S + 0.5)
    soak.scan()
    # SIGKILL takes effect asynchronously: give the killed process a moment
    # to be gone (a loaded machine saw it still running right after).
    deadline = time.monotonic() + 2
    left = soak.ours()
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = soak.ours()
    soak.events.close()
    if early or len(soak.outlived) != 1 or left:
        print(f"soak: probe FAILED: outlived within the grace {early}, after it "
              f"{soak.outlived}, still alive {left}", flush=True)
        return 1
    o = soak.outlived[0]
    print(f"soak: probe passed: the monitor caught and killed pid {o['pid']} "
          f"({o['cmd']}) {o['after_s']} s after its locker exited", flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--rlock", required=True)
    run.add_argument("--dir", required=True)
    run.add_argument("--seconds", type=float, default=600)
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--locker", choices=["rlock", "unsafe"], default="rlock")
    run.add_argument("--workers", type=int, default=6)
    run.add_argument("--no-faults", dest="faults", action="store_false")
    run.add_argument("--faults", dest="kinds", default=",".join(FAULT_KINDS),
                     help="the fault kinds to draw from, comma-separated")
    run.add_argument("--no-netns", dest="netns", action="store_false")
    run.add_argument("--expect-violation", action="store_true")
    chk = sub.add_parser("check")
    chk.add_argument("dir")
    prb = sub.add_parser("probe")
    prb.add_argument("dir")
    args = parser.parse_args()
    if args.cmd == "check":
        return check(args.dir)
    if args.cmd == "probe":
        return probe(args.dir)
    args.kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(args.kinds) - set(FAULT_KINDS)
    if unknown or not args.kinds:
        parser.error(f"--faults: unknown kinds {sorted(unknown)}; known: {','.join(FAULT_KINDS)}")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 10**9)
    args.rlock = os.path.abspath(args.rlock)
    soak = Soak(args)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda *_: soak.stop.set())
    return soak.run()


if __name__ == "__main__":
    sys.exit(main())

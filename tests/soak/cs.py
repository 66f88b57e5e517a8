#!/usr/bin/env python3
"""The soak's critical section: the command every locker runs under NAME.

It trusts nothing but the kernel: it takes an O_EXCL marker file per NAME on
entry and appends what it does, with stamps of one clock (SOAK_CLOCK), to an
append-only per-NAME log that the checker (soak.py, topology.py) reads
afterwards. See README.md, "The critical section".

Environment (set by soak.py; RLOCK_FENCE by the locker):
  SOAK_STATE    directory with markers/ and logs/
  SOAK_NAME     the lock name
  SOAK_RUN      this run's id
  SOAK_WORK_MS  how long to work (ticking every TICK_S)
  SOAK_HB       none | setsid | timeout: an out-of-group heartbeat child
  SOAK_HB_MS    how long that child writes heartbeats
  SOAK_STATUS   the exit status of a run that is not interrupted
  SOAK_CLOCK    realtime (default) or boottime: the clock of the stamps
                (CLOCK_BOOTTIME is shared by every process of the machine and
                is the clock of rlock's --events mono_ms; the topology soak
                uses it)

`cs.py --heartbeat` is the child's entry point (started through timeout(1)).

Log lines, one write(2) each on an O_APPEND descriptor:
  enter RUN PID T FENCE        the marker is ours (or was found held: see overlap)
  tick RUN PID T               still working
  hb RUN PID T                 a heartbeat of an out-of-group child
  exit RUN PID T FENCE STATUS  stopped working; the marker goes next
  stale RUN PID T OWNER_RUN    cleared a marker whose owner and children are dead
  overlap RUN PID T OWNER_RUN OWNER_PID  found the marker of a live holder
"""

import os
import signal
import subprocess
import sys
import time

TICK_S = 0.05
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT,
             signal.SIGUSR1, signal.SIGUSR2)


class Stop(Exception):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def on_signal(signum, _frame):
    raise Stop(signum)


def env(name, default=None):
    value = os.environ.get(name, default)
    if value is None:
        sys.exit(f"cs.py: ${name} is not set")
    return value


STATE = env("SOAK_STATE")
NAME = env("SOAK_NAME")
RUN = env("SOAK_RUN")
MARKER = os.path.join(STATE, "markers", NAME)
LOG = os.path.join(STATE, "logs", NAME + ".log")
CLOCK = {"realtime": time.CLOCK_REALTIME,
         "boottime": time.CLOCK_BOOTTIME}[os.environ.get("SOAK_CLOCK", "realtime")]


def log(kind, *fields):
    line = " ".join([kind, RUN, str(os.getpid()), str(time.clock_gettime_ns(CLOCK))]
                    + [str(f) for f in fields]) + "\n"
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def start_time(pid):
    """(state, starttime) of pid from /proc, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[0], fields[19]


def identity(pid):
    found = start_time(pid)
    return f"{pid} {found[1]}" if found else f"{pid} 0"


def alive(pid, started):
    """True while the process pid that started at `started` runs (a zombie
    or a recycled pid is dead)."""
    found = start_time(pid)
    return found is not None and found[1] == started and found[0] not in "ZX"


def read_marker():
    """(owner_run, owner_pid, [(pid, start)...] of owner and children), or
    None if there is no marker."""
    try:
        with open(MARKER) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    owner_run, owner_pid, procs = "?", "?", []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "owner":
            owner_run, owner_pid = parts[1], parts[2]
            procs.append((parts[2], parts[3]))
        elif len(parts) == 3 and parts[0] == "child":
            procs.append((parts[1], parts[2]))
    return owner_run, owner_pid, procs, text


def take_marker():
    """True when the marker is ours. A marker left by a holder that was
    killed (owner and every registered child dead) is moved aside and
    logged; one whose owner or a child still runs is an overlap."""
    mine = f"owner {RUN} {identity(os.getpid())}\n"
    for _ in range(5):
        try:
            fd = os.open(MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            found = read_marker()
            if found is None:
                continue
            owner_run, owner_pid, procs, text = found
            if any(alive(pid, started) for pid, started in procs) or (
                    not procs and marker_age() < 5):
                # No owner line yet: its writer is between open and write.
                log("overlap", owner_run, owner_pid)
                return False
            aside = os.path.join(STATE, "markers", f"stale.{NAME}.{RUN}")
            try:
                os.rename(MARKER, aside)
            except FileNotFoundError:
                continue
            with open(aside) as f:
                if f.read() != text:
                    # We moved a marker someone took since we read it.
                    log("overlap", "moved-live-marker", "-")
                    return False
            log("stale", owner_run)
            continue
        os.write(fd, mine.encode())
        os.close(fd)
        return True
    log("overlap", "marker-churn", "-")
    return False


def marker_age():
    try:
        return time.time() - os.stat(MARKER).st_mtime
    except FileNotFoundError:
        return 0.0


def drop_marker():
    found = read_marker()
    if found and found[0] == RUN and found[1] == str(os.getpid()):
        os.unlink(MARKER)


def heartbeat(duration_s):
    """The out-of-group child: register in the marker, then beat."""
    try:
        fd = os.open(MARKER, os.O_WRONLY | os.O_APPEND)
        os.write(fd, f"child {identity(os.getpid())}\n".encode())
        os.close(fd)
    except OSError:
        pass  # the parent does not own the marker: it logged an overlap
    end = time.monotonic() + duration_s
    while time.monotonic() < end:
        log("hb")
        time.sleep(TICK_S)
    log("hb")


def start_child(kind, duration_s):
    if kind == "setsid":
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.setsid()
                for signum in FORWARDED:
                    signal.signal(signum, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
                heartbeat(duration_s)
            except BaseException:  # noqa: B902 - the child must not return
                code = 1
            os._exit(code)
        return pid
    # timeout(1) puts itself and the child in a process group of their own.
    proc = subprocess.Popen(
        ["timeout", "60", sys.executable, "-I", "-S", os.path.abspath(__file__),
         "--heartbeat", str(duration_s)])
    return proc.pid


def stop_child(pid):
    try:
        if os.environ.get("SOAK_HB") == "timeout":
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def main():
    if sys.argv[1:2] == ["--heartbeat"]:
        heartbeat(float(sys.argv[2]))
        return 0
    for signum in FORWARDED:
        signal.signal(signum, on_signal)
    fence = os.environ.get("RLOCK_FENCE", "-") or "-"
    status = int(os.environ.get("SOAK_STATUS", "0"))
    own = False
    child = None
    # Until the marker and the child are recorded, a forwarded signal waits:
    # a stop in between would leave a marker or a child we do not know of.
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    try:
        own = take_marker()
        log("enter", fence)
        hb_kind = os.environ.get("SOAK_HB", "none")
        if hb_kind != "none":
            child = start_child(hb_kind, int(os.environ["SOAK_HB_MS"]) / 1000)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
        end = time.monotonic() + int(env("SOAK_WORK_MS")) / 1000
        while time.monotonic() < end:
            time.sleep(min(TICK_S, max(0.0, end - time.monotonic())))
            log("tick")
        if child is not None:
            while os.waitpid(child, os.WNOHANG) == (0, 0):
                time.sleep(TICK_S)
                log("tick")
            child = None
    except Stop as stop:
        status = 128 + stop.signum
    finally:
        # Our own work ends before we say so: the children first.
        for signum in FORWARDED:
            signal.signal(signum, signal.SIG_IGN)
        if child is not None:
            stop_child(child)
        log("exit", fence, status)
        if own:
            drop_marker()
    return status


if __name__ == "__main__":
    sys.exit(main())

#pragma once

#include <rlock/util/clock.hpp>
#include <rlock/util/fd.hpp>

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace rlock::proc {

// What the watchdog kills when it fires.
struct WatchedRun {
  pid_t group = 0;    // the command's process group; 0 until watch_group()
  std::string marker; // an environment entry ("RLOCK_RUN_<token>=1") only
                      // this run's processes carry
};

// A small process that kills everything the command started when rlock dies
// without saying goodbye (SIGKILL, the OOM killer, a crash), or when the
// lease ends without rlock having moved the deadline on: rlock may be
// stopped (SIGSTOP) while its child runs on. It waits on a pipe whose only
// write end rlock holds, and on a CLOCK_BOOTTIME timer. When it fires it
// stops, then kills, the command's group, every process in rlock's tree
// (while rlock lives) and every process whose environment carries the run's
// marker (which survives reparenting after rlock died). PR_SET_PDEATHSIG
// alone would reach only the direct child, and not a stopped parent's.
class Watchdog {
public:
  // Forks the watchdog for `run`, to fire at `kill_at` unless moved on by
  // kill_at(). rlock must be single-threaded here: the watchdog allocates.
  static Watchdog start(const WatchedRun& run, BootTime kill_at);

  // Moves the moment the watchdog fires at (after a renewal).
  void kill_at(BootTime when);

  // Tells the watchdog the command's process group, once it exists: the
  // watchdog may be started before the command, which it finds meanwhile
  // in rlock's tree and by the marker.
  void watch_group(pid_t group);

  // Returns the last moment given to the watchdog to fire at.
  BootTime
  deadline() const {
    return BootTime(m_kill_at_ns);
  }

  // True once the watchdog has fired (it may still be killing).
  bool fired() const;

  Watchdog(Watchdog&& other) noexcept;
  Watchdog& operator=(Watchdog&&) = delete;

  // Disarms it.
  ~Watchdog();

  // Ends the watchdog without waiting on it (it may be stopped), and reaps
  // it; fired() keeps its answer.
  void disarm();

  // Returns the watchdog's pid (-1 once disarmed).
  pid_t
  pid() const {
    return m_pid;
  }

private:
  Watchdog(pid_t pid, UniqueFd pipe, std::atomic<int>* fired, BootTime at);

  pid_t m_pid = -1;
  UniqueFd m_pipe;
  std::atomic<int>* m_fired = nullptr; // in a page shared with the watchdog
  std::int64_t m_kill_at_ns = 0;
};

} // namespace rlock::proc

#pragma once

#include <rlock/util/clock.hpp>
#include <rlock/util/fd.hpp>

#include <sys/types.h>

#include <cstdint>

namespace rlock::proc {

// A small process that kills a process group with SIGKILL when rlock dies
// without saying goodbye (SIGKILL, the OOM killer, a crash), or when the
// lease ends without rlock having moved the deadline on: rlock may be
// stopped (SIGSTOP) while its child runs on. It waits on a pipe whose only
// write end rlock holds, and on a CLOCK_BOOTTIME timer. PR_SET_PDEATHSIG
// alone would reach only the direct child, and not a stopped parent's.
class Watchdog {
public:
  // Forks the watchdog for process group `group`, to kill it at `kill_at`
  // unless moved on by kill_at().
  static Watchdog start(pid_t group, BootTime kill_at);

  // Moves the moment the group is killed at (after a renewal).
  void kill_at(BootTime when);

  Watchdog(Watchdog&& other) noexcept;
  Watchdog& operator=(Watchdog&&) = delete;

  // Disarms it.
  ~Watchdog();

  // Lets the watchdog exit without killing anything, and reaps it.
  void disarm();

  // Returns the watchdog's pid (-1 once disarmed).
  pid_t
  pid() const {
    return m_pid;
  }

private:
  Watchdog(pid_t pid, UniqueFd pipe);

  pid_t m_pid = -1;
  UniqueFd m_pipe;
  std::int64_t m_kill_at_ns = 0;
};

} // namespace rlock::proc

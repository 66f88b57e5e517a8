#pragma once

#include <rlock/util/fd.hpp>

#include <sys/types.h>

namespace rlock::proc {

// A small process that kills a process group with SIGKILL when rlock dies
// without saying goodbye (SIGKILL, the OOM killer, a crash). It waits on a
// pipe whose only write end rlock holds: when the pipe closes without a
// "disarm" byte, rlock is gone and so must be its child's group.
// PR_SET_PDEATHSIG alone would reach only the direct child.
class Watchdog {
public:
  // Forks the watchdog for process group `group`.
  static Watchdog start(pid_t group);

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
};

} // namespace rlock::proc

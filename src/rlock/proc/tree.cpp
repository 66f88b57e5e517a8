#include <rlock/proc/process_info.hpp>
#include <rlock/proc/tree.hpp>

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

namespace rlock::proc {

void
become_subreaper() {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
}

void
signal_and_continue(const Child& child, int signal) {
  child.signal_group(signal);
  if (signal != SIGKILL && signal != SIGCONT) {
    child.signal_group(SIGCONT);
  }
}

void
signal_tree(const Child& child, pid_t watchdog, int signal) {
  signal_and_continue(child, signal);
  for (const pid_t pid : descendants_of(getpid(), watchdog)) {
    if (getpgid(pid) != child.pid()) {
      kill(pid, signal);
      if (signal != SIGKILL) {
        kill(pid, SIGCONT);
      }
    }
  }
}

void
kill_descendants() {
  for (const pid_t pid : descendants_of(getpid(), -1)) {
    kill(pid, SIGKILL);
  }
}

} // namespace rlock::proc

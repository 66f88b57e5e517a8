#include <rlock/proc/exit_status.hpp>
#include <rlock/proc/shell_status.hpp>

#include <sys/wait.h>

namespace rlock::proc {

int
shell_status_of_wait_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return k_shell_signal_base + WTERMSIG(wait_status);
  }
  return WEXITSTATUS(wait_status);
}

int
shell_status_of_siginfo(int code, int status) {
  if (code == CLD_KILLED || code == CLD_DUMPED) {
    return k_shell_signal_base + status;
  }
  return status & 0xFF;
}

} // namespace rlock::proc

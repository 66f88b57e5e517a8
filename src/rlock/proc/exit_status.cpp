#include <rlock/proc/exit_status.hpp>
#include <rlock/util/exit_codes.hpp>

#include <sys/wait.h>

namespace rlock::proc {

int
exit_code_of_wait_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return exit_code::k_signal_base + WTERMSIG(wait_status);
  }
  return WEXITSTATUS(wait_status);
}

int
exit_code_of_siginfo(int code, int status) {
  if (code == CLD_KILLED || code == CLD_DUMPED) {
    return exit_code::k_signal_base + status;
  }
  return status & 0xFF;
}

} // namespace rlock::proc

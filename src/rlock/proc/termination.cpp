#include <rlock/proc/shell_status.hpp>
#include <rlock/proc/termination.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

namespace rlock::proc {

namespace {

int g_end_signal = 0;

} // namespace

void
end_by_signal(int signal) {
  g_end_signal = signal;
}

int
pending_end_signal() {
  return g_end_signal;
}

void
die_by_signal(int signal) {
  // The child may have dumped core; rlock has nothing worth a dump.
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  std::signal(signal, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(signal);
  _exit(k_shell_signal_base + signal);
}

} // namespace rlock::proc

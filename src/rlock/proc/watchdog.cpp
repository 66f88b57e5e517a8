#include <rlock/proc/process_title.hpp>
#include <rlock/proc/watchdog.hpp>
#include <rlock/util/error.hpp>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <utility>

namespace rlock::proc {

namespace {

constexpr char k_disarm = 'q';

[[noreturn]] void
watch(int pipe_fd, pid_t group) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, nullptr);
  // Out of rlock's job, so a signal to that job does not take us along.
  setpgid(0, 0);
  prctl(PR_SET_NAME, "rlock-watchdog");
  set_process_title("rlock-watchdog");
  // Keep nothing of rlock's open: a watchdog holding a pipe of the caller's
  // would delay that reader's EOF.
  const int kept = fcntl(pipe_fd, F_DUPFD, 10);
  const int null_fd = open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; ++fd) {
    dup2(null_fd, fd);
  }
  dup2(kept, 3);
  close_range(4, ~0U, 0);
  char byte = 0;
  ssize_t n = 0;
  do {
    n = read(3, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || byte != k_disarm) {
    kill(-group, SIGKILL);
  }
  _exit(0);
}

} // namespace

Watchdog::Watchdog(pid_t pid, UniqueFd pipe)
    : m_pid(pid), m_pipe(std::move(pipe)) {
}

Watchdog::Watchdog(Watchdog&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)), m_pipe(std::move(other.m_pipe)) {
}

Watchdog::~Watchdog() {
  disarm();
}

Watchdog
Watchdog::start(pid_t group) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    throw_errno("pipe");
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  const pid_t pid = fork();
  if (pid < 0) {
    throw_errno("fork");
  }
  if (pid == 0) {
    watch(read_end.get(), group);
  }
  return Watchdog(pid, std::move(write_end));
}

void
Watchdog::disarm() {
  if (m_pid <= 0) {
    return;
  }
  [[maybe_unused]] const auto n = write(m_pipe.get(), &k_disarm, 1);
  m_pipe.reset();
  while (waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  m_pid = -1;
}

} // namespace rlock::proc

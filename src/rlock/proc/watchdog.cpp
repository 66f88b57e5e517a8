#include <rlock/proc/process_title.hpp>
#include <rlock/proc/watchdog.hpp>
#include <rlock/util/error.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <utility>

namespace rlock::proc {

namespace {

// Messages on the pipe are 8-byte CLOCK_BOOTTIME instants in nanoseconds:
// the new moment to kill the group at; 0 disarms.
constexpr std::int64_t k_disarm = 0;

void
arm(int timer_fd, std::int64_t kill_at_ns) {
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(kill_at_ns / 1'000'000'000);
  spec.it_value.tv_nsec = static_cast<long>(kill_at_ns % 1'000'000'000);
  timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &spec, nullptr);
}

// Runs in the forked watchdog: only async-signal-safe calls.
[[noreturn]] void
watch(int pipe_fd, pid_t group, std::int64_t kill_at_ns) {
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
  // The timer runs on CLOCK_BOOTTIME: it fires at the lease's end even when
  // rlock is stopped (its renewer with it) or the machine slept.
  const int timer_fd = timerfd_create(CLOCK_BOOTTIME, 0);
  arm(timer_fd, kill_at_ns);
  while (true) {
    pollfd fds[2] = {{3, POLLIN, 0}, {timer_fd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      continue;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      break; // the lease ended without word from rlock
    }
    std::int64_t message = 0;
    const ssize_t n = read(3, &message, sizeof(message));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n != static_cast<ssize_t>(sizeof(message))) {
      break; // rlock is gone
    }
    if (message == k_disarm) {
      _exit(0);
    }
    arm(timer_fd, message);
  }
  kill(-group, SIGKILL);
  // Stay until rlock disarms or dies, so that its writes to the pipe never
  // meet a closed reader.
  std::int64_t message = 0;
  while (read(3, &message, sizeof(message)) > 0 || errno == EINTR) {
    if (message == k_disarm) {
      break;
    }
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
Watchdog::start(pid_t group, BootTime kill_at) {
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
    watch(read_end.get(), group, kill_at.count());
  }
  return Watchdog(pid, std::move(write_end));
}

void
Watchdog::kill_at(BootTime when) {
  if (m_pid > 0 && when.count() != m_kill_at_ns) {
    m_kill_at_ns = when.count();
    [[maybe_unused]] const auto n =
        write(m_pipe.get(), &m_kill_at_ns, sizeof(m_kill_at_ns));
  }
}

void
Watchdog::disarm() {
  if (m_pid <= 0) {
    return;
  }
  [[maybe_unused]] const auto n =
      write(m_pipe.get(), &k_disarm, sizeof(k_disarm));
  m_pipe.reset();
  while (waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  m_pid = -1;
}

} // namespace rlock::proc

#include <rlock/proc/child.hpp>
#include <rlock/proc/exit_status.hpp>
#include <rlock/proc/shell_status.hpp>
#include <rlock/util/clock.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/fd.hpp>
#include <rlock/util/text.hpp>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace rlock::proc {

namespace {

// How long finish() waits for what the group left running to die of its
// SIGKILL: only a process stuck in the kernel takes longer.
constexpr auto k_group_exit_bound = std::chrono::milliseconds(100);

// Reaps the members of `group` that are our children (the leader's orphans
// come to us as subreaper) until none is left, or `bound` has passed.
void
reap_group(pid_t group, Duration bound) {
  const auto end = boot_now() + bound;
  while (true) {
    const pid_t reaped = waitpid(-group, nullptr, WNOHANG);
    if (reaped > 0 || (reaped < 0 && errno == EINTR)) {
      continue;
    }
    if (reaped < 0 || boot_now() >= end) {
      return; // ECHILD: none left
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// True when we are the terminal's foreground job, so the child should be.
bool
should_own_terminal() {
  return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

std::vector<char*>
c_strings(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (auto& s : strings) {
    result.push_back(s.data());
  }
  result.push_back(nullptr);
  return result;
}

std::vector<std::string>
merged_environment(const std::vector<std::string>& additions) {
  std::vector<std::string> result;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view current(*entry);
    const auto name = current.substr(0, current.find('=') + 1);
    bool replaced = false;
    for (const auto& addition : additions) {
      replaced = replaced || addition.starts_with(name);
    }
    if (!replaced) {
      result.emplace_back(current);
    }
  }
  result.insert(result.end(), additions.begin(), additions.end());
  return result;
}

// Runs in the vforked child, on rlock's memory while rlock waits: only
// async-signal-safe calls that change nothing of rlock's, until the exec.
// A failed exec's errno goes down `error_fd` (closed by a successful one).
[[noreturn]] void
exec_child(char** argv,
           char** envp,
           const sigset_t& mask,
           bool own_terminal,
           pid_t parent,
           int error_fd) {
  setpgid(0, 0);
  if (own_terminal) {
    tcsetpgrp(STDIN_FILENO, getpid()); // SIGTTOU is still blocked here
  }
  // The direct child dies with rlock; the watchdog handles the rest of the
  // group.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) {
    _exit(EXIT_FAILURE); // not seen: rlock is gone
  }
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  execvpe(argv[0], argv, envp);
  const int error = errno;
  [[maybe_unused]] const auto n = write(error_fd, &error, sizeof(error));
  _exit(error == ENOENT ? k_shell_not_found : k_shell_not_executable);
}

// vfork: no copy of rlock's pages to make and fault in, and rlock goes on
// only once the command runs (or failed to). Not posix_spawn: the child
// must set its death signal and take the terminal. A function of its own,
// so that no local of the caller lives across the vfork. Returns the pid,
// or -1 with errno.
[[gnu::noinline]] pid_t
vfork_exec(char** argv,
           char** envp,
           const sigset_t& mask,
           bool own_terminal,
           pid_t parent,
           int error_fd) {
  const pid_t pid = vfork();
  if (pid == 0) {
    exec_child(argv, envp, mask, own_terminal, parent, error_fd);
  }
  return pid;
}

// Returns the errno of the child's failed exec, 0 once it succeeded. A pipe
// rather than a word of the shared memory: sanitizers (TSan) turn vfork into
// fork, and then only the pipe tells, and waits for the exec.
int
read_exec_error(int fd) {
  int error = 0;
  while (true) {
    const auto n = read(fd, &error, sizeof(error));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    return n == static_cast<ssize_t>(sizeof(error)) ? error : 0;
  }
}

} // namespace

Child::Child(pid_t pid, bool has_terminal)
    : m_pid(pid), m_has_terminal(has_terminal) {
}

Child::Child(Child&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)),
      m_program(std::move(other.m_program)),
      m_has_terminal(other.m_has_terminal),
      m_resume_pending(other.m_resume_pending) {
}

Child::~Child() {
  if (m_pid > 0) {
    finish();
  }
}

Child
Child::spawn(const ChildSpec& spec) {
  auto argv_strings = spec.argv;
  auto env_strings = merged_environment(spec.environment);
  auto argv = c_strings(argv_strings);
  auto envp = c_strings(env_strings);
  const bool own_terminal = should_own_terminal();
  const pid_t parent = getpid();
  int error_fds[2];
  if (pipe2(error_fds, O_CLOEXEC) != 0) {
    throw_errno("pipe");
  }
  UniqueFd error_read(error_fds[0]);
  UniqueFd error_write(error_fds[1]);
  const pid_t pid = vfork_exec(argv.data(),
                               envp.data(),
                               spec.signal_mask,
                               own_terminal,
                               parent,
                               error_write.get());
  if (pid < 0) {
    throw_errno("fork");
  }
  error_write.reset(); // so that the exec's close is the last
  // Both sides set the group and the terminal, so neither order races.
  setpgid(pid, pid);
  if (own_terminal) {
    tcsetpgrp(STDIN_FILENO, pid);
  }
  Child child(pid, isatty(STDIN_FILENO) != 0);
  child.m_program = spec.argv.front();
  if (const int error = read_exec_error(error_read.get()); error != 0) {
    child.finish();
    throw Error(
        error == ENOENT ? ErrorKind::not_found : ErrorKind::not_executable,
        "cannot run " + quote(child.m_program) + ": " + std::strerror(error));
  }
  return child;
}

void
Child::signal_group(int signal) const {
  if (m_pid > 0) {
    kill(-m_pid, signal);
  }
}

std::optional<int>
Child::shell_status() {
  siginfo_t info{};
  const int flags = WEXITED | WSTOPPED | WNOHANG | WNOWAIT;
  if (waitid(P_PID, static_cast<id_t>(m_pid), &info, flags) != 0) {
    // Reaped by someone else (SIGCHLD ignored): gone, its status with it.
    return errno == ECHILD ? std::optional(k_status_unknown) : std::nullopt;
  }
  if (info.si_pid == 0) {
    return std::nullopt;
  }
  if (info.si_code == CLD_STOPPED) {
    // Consume the stop report.
    const int signal = info.si_status;
    waitid(P_PID, static_cast<id_t>(m_pid), &info, WSTOPPED | WNOHANG);
    follow_stop(signal);
    return std::nullopt;
  }
  return shell_status_of_siginfo(info.si_code, info.si_status);
}

// Job control at a terminal, as a shell would do it for its job: a child
// that wants the terminal gets it when we have it; a child stopped by Ctrl-Z
// (or needing the terminal while we are in the background) takes rlock into
// the stopped state with it. Either way the owner decides, through
// resume_pending(), whether the child may go on: its lease may have run out
// meanwhile.
void
Child::follow_stop(int signal) {
  const bool terminal_stop =
      signal == SIGTSTP || signal == SIGTTIN || signal == SIGTTOU;
  if (!m_has_terminal || !terminal_stop) {
    return; // stopped by someone's SIGSTOP: theirs to continue
  }
  const bool foreground = tcgetpgrp(STDIN_FILENO) == getpgrp();
  if (signal != SIGTSTP && foreground) {
    tcsetpgrp(STDIN_FILENO, m_pid);
    m_resume_pending = true;
    return;
  }
  if (tcgetpgrp(STDIN_FILENO) == m_pid) {
    tcsetpgrp(STDIN_FILENO, getpgrp());
  }
  raise(SIGSTOP);
  // Continued by fg or bg: with fg the terminal is ours to hand over.
  if (tcgetpgrp(STDIN_FILENO) == getpgrp()) {
    tcsetpgrp(STDIN_FILENO, m_pid);
  }
  m_resume_pending = true;
}

bool
Child::resume_pending() const {
  return m_resume_pending;
}

void
Child::resume() {
  m_resume_pending = false;
  signal_group(SIGCONT);
}

int
Child::finish() {
  // The zombie keeps the group id reserved, so this cannot hit a stranger.
  signal_group(SIGKILL);
  int status = 0;
  pid_t reaped = 0;
  while ((reaped = waitpid(m_pid, &status, 0)) < 0 && errno == EINTR) {
  }
  // Their exit closes what they held: a waiter for this very lock among
  // them must be gone before the release, or the server may hand it the
  // release's one wake-up.
  reap_group(m_pid, k_group_exit_bound);
  if (m_has_terminal && tcgetpgrp(STDIN_FILENO) == m_pid) {
    tcsetpgrp(STDIN_FILENO, getpgrp());
  }
  m_pid = -1;
  if (reaped < 0) {
    return k_status_unknown; // reaped by someone else
  }
  m_termination_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return shell_status_of_wait_status(status);
}

} // namespace rlock::proc

#include <rlock/proc/command_output.hpp>
#include <rlock/proc/signals.hpp>
#include <rlock/util/clock.hpp>
#include <rlock/util/fd.hpp>
#include <rlock/util/text.hpp>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

extern char** environ;

namespace rlock::proc {

namespace {

// The children first_line_of() waits for, and the lock that keeps another
// thread (the main one, reaping orphans) from reaping them meanwhile.
std::mutex g_children_mutex;
std::set<pid_t> g_children;

// How much of stdout is kept (the first line is all that counts), and how
// much of stderr's tail a reason shows.
constexpr std::size_t k_stdout_kept = 64 * 1024;
constexpr std::size_t k_stderr_kept = 4096;
constexpr std::size_t k_stderr_shown = 400;
// After the shell exited, how long a process it left behind may keep its
// output open before the output counts as complete.
constexpr auto k_after_exit = std::chrono::milliseconds(200);

using Result = Expected<std::string>;

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

std::optional<Pipe>
make_pipe() {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
    return std::nullopt;
  }
  Pipe pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
  ::fcntl(pipe.read.get(), F_SETFL, O_NONBLOCK);
  return pipe;
}

// Starts `command`; returns its pid, or the errno of the failure.
std::pair<pid_t, int>
spawn(const std::string& command, const Pipe& out, const Pipe& err) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err.write.get(), 2);
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK
                               | POSIX_SPAWN_SETSIGDEF);
  std::string shell = "sh";
  std::string dash_c = "-c";
  std::string text = command;
  std::array<char*, 4> argv{shell.data(), dash_c.data(), text.data(), nullptr};
  pid_t pid = -1;
  int rc = 0;
  {
    std::lock_guard lock(g_children_mutex);
    rc = posix_spawn(
        &pid, "/bin/sh", &actions, &attributes, argv.data(), environ);
    if (rc == 0) {
      g_children.insert(pid);
    }
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  return {pid, rc};
}

// Reaps `pid` (blocking) and forgets it.
int
reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::lock_guard lock(g_children_mutex);
  g_children.erase(pid);
  return status;
}

// Reads what `fd` holds into `into`, keeping at most `kept` bytes (the
// first ones when `head`, else the last); false at the end of the output.
bool
drain(int fd, std::string& into, std::size_t kept, bool head) {
  std::array<char, 4096> buffer{};
  while (true) {
    const auto n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      return errno == EAGAIN || errno == EINTR;
    }
    if (n == 0) {
      return false;
    }
    const auto count = static_cast<std::size_t>(n);
    if (head) {
      into.append(buffer.data(),
                  std::min(count, kept - std::min(kept, into.size())));
    } else {
      into.append(buffer.data(), count);
      if (into.size() > kept) {
        into.erase(0, into.size() - kept);
      }
    }
  }
}

// " (its stderr: '...')", the tail of what the command wrote there; "" when
// it wrote nothing.
std::string
stderr_part(std::string text) {
  while (!text.empty()
         && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '
             || text.back() == '\t')) {
    text.pop_back();
  }
  if (text.empty()) {
    return {};
  }
  if (text.size() > k_stderr_shown) {
    text = "..." + text.substr(text.size() - k_stderr_shown);
  }
  return " (its stderr: " + quote(text) + ")";
}

std::string
status_text(int status) {
  if (WIFSIGNALED(status)) {
    return "was killed by SIG" + signal_name(WTERMSIG(status));
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// A descriptor that turns readable when `pid` exits; -1 where the kernel
// has none (before Linux 5.3): then the exit is polled for.
UniqueFd
exit_fd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return UniqueFd(static_cast<int>(fd));
  }
#endif
  return UniqueFd();
}

} // namespace

Expected<std::string>
first_line_of(const std::string& command, Duration timeout, int cancel_fd) {
  auto out = make_pipe();
  auto err = make_pipe();
  if (!out || !err) {
    return Result::failure(std::string("could not be started: pipe: ")
                           + std::strerror(errno));
  }
  const auto [pid, spawn_error] = spawn(command, *out, *err);
  out->write.reset();
  err->write.reset();
  if (spawn_error != 0) {
    return Result::failure(std::string("could not be started: ")
                           + std::strerror(spawn_error));
  }
  const UniqueFd exited = exit_fd(pid);
  const BootTime end = boot_now() + timeout;
  std::string output;
  std::string errors;
  bool out_open = true;
  bool err_open = true;
  std::optional<int> status;
  BootTime drained_by{};
  bool cancelled = false;
  while (true) {
    if (!status) {
      int raw = 0;
      if (::waitpid(pid, &raw, WNOHANG) == pid) {
        status = raw;
        drained_by = std::min(end, boot_now() + k_after_exit);
        std::lock_guard lock(g_children_mutex);
        g_children.erase(pid);
      }
    }
    const BootTime now = boot_now();
    if (status && ((!out_open && !err_open) || now >= drained_by)) {
      break;
    }
    if (now >= end || cancelled) {
      ::kill(-pid, SIGKILL);
      if (!status) {
        reap(pid);
      }
      return Result::failure((cancelled ? std::string("was stopped")
                                        : "did not finish within "
                                              + format_duration(timeout)
                                              + " (it was killed)")
                             + stderr_part(errors));
    }
    std::array<pollfd, 4> fds{{{out_open ? out->read.get() : -1, POLLIN, 0},
                               {err_open ? err->read.get() : -1, POLLIN, 0},
                               {cancel_fd, POLLIN, 0},
                               {status ? -1 : exited.get(), POLLIN, 0}}};
    // Without a descriptor for the exit, look for it every 10ms.
    const BootTime wake =
        status ? drained_by
               : (exited.get() >= 0
                      ? end
                      : std::min(end, now + std::chrono::milliseconds(10)));
    const auto ms =
        std::chrono::ceil<std::chrono::milliseconds>(wake - now).count();
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long>(ms, 0)));
    if (fds[0].revents != 0) {
      out_open = drain(out->read.get(), output, k_stdout_kept, true);
    }
    if (fds[1].revents != 0) {
      err_open = drain(err->read.get(), errors, k_stderr_kept, false);
    }
    if (fds[2].revents != 0) {
      cancelled = true;
    }
  }
  if (*status != 0) {
    return Result::failure(status_text(*status) + stderr_part(errors));
  }
  std::string line = output.substr(0, output.find('\n'));
  if (line.ends_with('\r')) {
    line.pop_back();
  }
  if (line.empty()) {
    return Result::failure(
        (output.empty() ? "printed nothing" : "printed an empty first line")
        + stderr_part(errors));
  }
  return line;
}

void
with_command_children(pid_t pid, const std::function<void(bool)>& reap) {
  std::lock_guard lock(g_children_mutex);
  reap(g_children.contains(pid));
}

} // namespace rlock::proc

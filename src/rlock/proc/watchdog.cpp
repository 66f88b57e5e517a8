#include <rlock/proc/process_info.hpp>
#include <rlock/proc/process_title.hpp>
#include <rlock/proc/watchdog.hpp>
#include <rlock/util/error.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

namespace rlock::proc {

struct WatchdogShared {
  // The CLOCK_BOOTTIME instant to fire at, in nanoseconds; k_disarm ends it.
  std::atomic<std::int64_t> kill_at_ns{0};
  // The command's process group; 0 until it exists.
  std::atomic<pid_t> group{0};
  // Set by the watchdog when it fires.
  std::atomic<int> fired{0};
};

namespace {

static_assert(std::atomic<std::int64_t>::is_always_lock_free,
              "the shared page needs atomics that work across processes");

// The deadline that tells the watchdog to exit.
constexpr std::int64_t k_disarm = 0;

// Sweeps for processes that forked while the previous sweep stopped others;
// each sweep that finds something new stops it, so the forks run out fast.
constexpr int k_max_sweeps = 100;

void
arm(int timer_fd, std::int64_t kill_at_ns) {
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(kill_at_ns / 1'000'000'000);
  spec.it_value.tv_nsec = static_cast<long>(kill_at_ns % 1'000'000'000);
  timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &spec, nullptr);
}

// Stops each of `pids` not stopped yet; true when there was one.
bool
stop_new(const std::vector<pid_t>& pids, std::vector<pid_t>& stopped) {
  bool found_new = false;
  for (const pid_t pid : pids) {
    if (pid != getpid()
        && std::find(stopped.begin(), stopped.end(), pid) == stopped.end()) {
      kill(pid, SIGSTOP);
      stopped.push_back(pid);
      found_new = true;
    }
  }
  return found_new;
}

// Stops the processes of the run and returns true when one was new: first
// rlock's tree while rlock lives (it is their subreaper, so orphans stay in
// it; a dead rlock's pid may be a stranger's), then whatever carries the
// marker. The tree goes first: reading another process's environment can
// wait on that process's memory lock.
bool
stop_sweep(pid_t rlock,
           const std::string& marker,
           std::vector<pid_t>& stopped) {
  bool found_new = false;
  if (getppid() == rlock) {
    found_new = stop_new(descendants_of(rlock, getpid()), stopped);
  }
  std::vector<pid_t> marked = processes_with_environment_entry(marker);
  std::erase(marked, rlock);
  return stop_new(marked, stopped) || found_new;
}

// Stops everything of the run first, sweep after sweep until a sweep finds
// nothing new (a stopped process forks no more), then kills it all: a kill
// sent while a process forks could miss the new child.
void
kill_run(pid_t rlock, const WatchedRun& run) {
  std::vector<pid_t> stopped;
  if (run.group > 0) {
    kill(-run.group, SIGSTOP);
  }
  for (int sweep = 0; sweep < k_max_sweeps; ++sweep) {
    if (!stop_sweep(rlock, run.marker, stopped)) {
      break;
    }
  }
  if (run.group > 0) {
    kill(-run.group, SIGKILL);
  }
  for (const pid_t pid : stopped) {
    kill(pid, SIGKILL);
  }
  // Anything that slipped through (the sweep cap reached) gets SIGKILL too.
  std::vector<pid_t> last;
  stop_sweep(rlock, run.marker, last);
  for (const pid_t pid : last) {
    kill(pid, SIGKILL);
  }
}

// Reads what woke the watchdog on the socket; false when rlock is gone (end
// of file: its end closed with it).
bool
rlock_alive(int socket_fd) {
  char bytes[4096];
  const ssize_t n = read(socket_fd, bytes, sizeof(bytes));
  return n != 0;
}

// Runs in the forked watchdog. rlock was single-threaded at the fork, so
// allocating is safe here.
[[noreturn]] void
watch(int socket_fd, WatchedRun run, WatchdogShared* shared) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, nullptr);
  const pid_t rlock = getppid();
  // Out of rlock's job, so a signal to that job does not take us along.
  setpgid(0, 0);
  prctl(PR_SET_NAME, "rlock-watchdog");
  set_process_title("rlock-watchdog");
  // Keep nothing of rlock's open: a watchdog holding a pipe of the caller's
  // would delay that reader's EOF.
  const int kept = fcntl(socket_fd, F_DUPFD, 10);
  const int null_fd = open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; ++fd) {
    dup2(null_fd, fd);
  }
  dup2(kept, 3);
  close_range(4, ~0U, 0);
  // The timer runs on CLOCK_BOOTTIME: it fires at the lease's end even when
  // rlock is stopped (its renewer with it) or the machine slept.
  const int timer_fd = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK);
  while (true) {
    // Read after the wake-up: rlock writes the page, then the socket.
    const std::int64_t kill_at_ns = shared->kill_at_ns.load();
    if (kill_at_ns == k_disarm) {
      _exit(0);
    }
    if (const pid_t group = shared->group.load(); group > 0) {
      run.group = group;
    }
    // The deadline of now, also after the timer of an older one went off
    // while we were stopped.
    if (boot_now().count() >= kill_at_ns) {
      break; // the lease ended without word from rlock
    }
    arm(timer_fd, kill_at_ns);
    pollfd fds[2] = {{3, POLLIN, 0}, {timer_fd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      continue;
    }
    if (fds[0].revents != 0 && !rlock_alive(3)) {
      break;
    }
    std::uint64_t ticks = 0;
    [[maybe_unused]] const auto n = read(timer_fd, &ticks, sizeof(ticks));
  }
  shared->fired.store(1);
  kill_run(rlock, run);
  // Stay until rlock disarms or dies: a watchdog gone would tell rlock
  // that nothing guards the run any more.
  while (rlock_alive(3) && shared->kill_at_ns.load() != k_disarm) {
  }
  _exit(0);
}

// Forking from a second thread's process would leave the watchdog with
// whatever locks that thread held (malloc's among them).
void
require_single_thread() {
  if (numeric_entries("/proc/self/task").size() > 1) {
    throw Error(ErrorKind::system,
                "internal error: the watchdog must be started before any "
                "thread");
  }
}

WatchdogShared*
map_shared_page(BootTime kill_at) {
  void* page = mmap(nullptr,
                    sizeof(WatchdogShared),
                    PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS,
                    -1,
                    0);
  if (page == MAP_FAILED) {
    throw_errno("mmap");
  }
  auto* shared = new (page) WatchdogShared;
  shared->kill_at_ns.store(kill_at.count());
  return shared;
}

// A connected pair of sockets: the watchdog's end, rlock's end. A socket
// rather than a pipe: rlock's sends can ask not to block and not to raise
// SIGPIPE once the watchdog is gone. rlock's send buffer is the smallest
// the kernel allows: a few unread bytes wake the watchdog as well as many,
// and a stopped watchdog fills it within a few renewals, so that the path
// of a byte that does not fit is the one every such run takes.
std::pair<UniqueFd, UniqueFd>
make_channel() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw_errno("socketpair");
  }
  const int smallest = 1;
  setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &smallest, sizeof(smallest));
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

} // namespace

Watchdog::Watchdog(pid_t pid,
                   UniqueFd channel,
                   WatchdogShared* shared,
                   BootTime at)
    : m_pid(pid), m_channel(std::move(channel)), m_shared(shared),
      m_kill_at_ns(at.count()) {
}

Watchdog::Watchdog(Watchdog&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)),
      m_channel(std::move(other.m_channel)),
      m_shared(std::exchange(other.m_shared, nullptr)),
      m_kill_at_ns(other.m_kill_at_ns) {
}

Watchdog::~Watchdog() {
  disarm();
  if (m_shared != nullptr) {
    munmap(m_shared, sizeof(WatchdogShared));
  }
}

Watchdog
Watchdog::start(const WatchedRun& run, BootTime kill_at) {
  require_single_thread();
  WatchdogShared* shared = map_shared_page(kill_at);
  try {
    auto [its_end, our_end] = make_channel();
    const pid_t pid = fork();
    if (pid < 0) {
      throw_errno("fork");
    }
    if (pid == 0) {
      watch(its_end.get(), run, shared);
    }
    return Watchdog(pid, std::move(our_end), shared, kill_at);
  } catch (...) {
    munmap(shared, sizeof(WatchdogShared));
    throw;
  }
}

// One byte, sent after the page is written: the watchdog reads the page
// after the socket. A byte that does not fit is not needed: the socket is
// then full of bytes the watchdog has yet to read, which wake it just as
// well. A dead watchdog reads nothing (EPIPE, without SIGPIPE).
void
Watchdog::wake() const {
  const char byte = 1;
  [[maybe_unused]] const auto n =
      send(m_channel.get(), &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void
Watchdog::kill_at(BootTime when) {
  if (m_pid > 0 && when.count() != m_kill_at_ns) {
    m_kill_at_ns = when.count();
    m_shared->kill_at_ns.store(m_kill_at_ns);
    wake();
  }
}

void
Watchdog::watch_group(pid_t group) {
  if (m_pid > 0 && group > 0) {
    m_shared->group.store(group);
    wake();
  }
}

bool
Watchdog::fired() const {
  return m_shared != nullptr && m_shared->fired.load() != 0;
}

bool
Watchdog::alive() const {
  if (m_pid <= 0) {
    return false;
  }
  // A socket whose other end closed polls as POLLHUP.
  pollfd end{m_channel.get(), 0, 0};
  return ::poll(&end, 1, 0) == 0;
}

void
Watchdog::disarm() {
  if (m_pid <= 0) {
    return;
  }
  m_shared->kill_at_ns.store(k_disarm);
  wake();
  m_channel.reset();
  // It only needs to end: a stopped watchdog (a debugger, a kill -STOP over
  // a list of pids) must not keep rlock from exiting.
  kill(m_pid, SIGKILL);
  while (waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  m_pid = -1;
}

} // namespace rlock::proc

#include <rlock/proc/process_info.hpp>
#include <rlock/proc/process_title.hpp>
#include <rlock/proc/watchdog.hpp>
#include <rlock/util/error.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

namespace rlock::proc {

namespace {

// Messages on the pipe are 8-byte CLOCK_BOOTTIME instants in nanoseconds:
// the new moment to fire at; 0 disarms; a negative one is minus the
// command's process group.
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

// Runs in the forked watchdog. rlock was single-threaded at the fork, so
// allocating is safe here.
[[noreturn]] void
watch(int pipe_fd,
      WatchedRun run,
      std::int64_t kill_at_ns,
      std::atomic<int>* fired) {
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
    if (message < 0) {
      run.group = static_cast<pid_t>(-message);
      continue;
    }
    arm(timer_fd, message);
  }
  fired->store(1);
  kill_run(rlock, run);
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

std::atomic<int>*
map_shared_flag() {
  void* page = mmap(nullptr,
                    sizeof(std::atomic<int>),
                    PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS,
                    -1,
                    0);
  if (page == MAP_FAILED) {
    throw_errno("mmap");
  }
  return new (page) std::atomic<int>(0);
}

} // namespace

Watchdog::Watchdog(pid_t pid,
                   UniqueFd pipe,
                   std::atomic<int>* fired,
                   BootTime at)
    : m_pid(pid), m_pipe(std::move(pipe)), m_fired(fired),
      m_kill_at_ns(at.count()) {
}

Watchdog::Watchdog(Watchdog&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)), m_pipe(std::move(other.m_pipe)),
      m_fired(std::exchange(other.m_fired, nullptr)),
      m_kill_at_ns(other.m_kill_at_ns) {
}

Watchdog::~Watchdog() {
  disarm();
  if (m_fired != nullptr) {
    munmap(m_fired, sizeof(std::atomic<int>));
  }
}

Watchdog
Watchdog::start(const WatchedRun& run, BootTime kill_at) {
  require_single_thread();
  std::atomic<int>* fired = map_shared_flag();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    munmap(fired, sizeof(std::atomic<int>));
    throw_errno("pipe");
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  const pid_t pid = fork();
  if (pid < 0) {
    munmap(fired, sizeof(std::atomic<int>));
    throw_errno("fork");
  }
  if (pid == 0) {
    watch(read_end.get(), run, kill_at.count(), fired);
  }
  return Watchdog(pid, std::move(write_end), fired, kill_at);
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
Watchdog::watch_group(pid_t group) {
  if (m_pid > 0 && group > 0) {
    const std::int64_t message = -static_cast<std::int64_t>(group);
    [[maybe_unused]] const auto n =
        write(m_pipe.get(), &message, sizeof(message));
  }
}

bool
Watchdog::fired() const {
  return m_fired != nullptr && m_fired->load() != 0;
}

void
Watchdog::disarm() {
  if (m_pid <= 0) {
    return;
  }
  [[maybe_unused]] const auto n =
      write(m_pipe.get(), &k_disarm, sizeof(k_disarm));
  m_pipe.reset();
  // It only needs to end: a stopped watchdog (a debugger, a kill -STOP over
  // a list of pids) must not keep rlock from exiting.
  kill(m_pid, SIGKILL);
  while (waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  m_pid = -1;
}

} // namespace rlock::proc

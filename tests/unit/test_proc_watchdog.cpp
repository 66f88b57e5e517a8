#include <rlock/proc/process_info.hpp>
#include <rlock/proc/watchdog.hpp>
#include <rlock/util/error.hpp>

#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using rlock::boot_now;
using rlock::proc::Watchdog;

TEST_CASE("Watchdog::start refuses to fork from a process with threads") {
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  std::thread other([&] {
    std::unique_lock lock(mutex);
    done.wait(lock, [&] { return finished; });
  });
  CHECK_THROWS_AS(Watchdog::start({getpid(), "RLOCK_TOKEN=x"},
                                  boot_now() + std::chrono::hours(1)),
                  rlock::Error);
  {
    std::lock_guard lock(mutex);
    finished = true;
  }
  done.notify_one();
  other.join();
}

TEST_CASE("processes_with_environment_entry finds exact entries only") {
  const std::string entry = "RLOCK_PROC_TEST=" + std::to_string(getpid());
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    char* const argv[] = {
        const_cast<char*>("sleep"), const_cast<char*>("10"), nullptr};
    char* const envp[] = {const_cast<char*>(entry.c_str()), nullptr};
    execve("/bin/sleep", argv, envp);
    _exit(127);
  }
  // The exec replaces the environment: poll until the new one shows.
  std::vector<pid_t> found;
  for (int i = 0; i < 200 && found.empty(); ++i) {
    found = rlock::proc::processes_with_environment_entry(entry);
    usleep(10'000);
  }
  const auto prefix_only =
      rlock::proc::processes_with_environment_entry(entry.substr(0, 10));
  const auto longer =
      rlock::proc::processes_with_environment_entry(entry + "0");
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  CHECK(found == std::vector<pid_t>{pid});
  CHECK(prefix_only.empty());
  CHECK(longer.empty());
}

namespace {

// A watchdog with nothing to kill: no group, and a mark no process carries.
Watchdog
idle_watchdog(rlock::BootTime kill_at) {
  return Watchdog::start(
      {0, "RLOCK_RUN_unit-test-" + std::to_string(getpid()) + "=1"}, kill_at);
}

// Waits (up to 5s) until the watchdog, named by then, is in `state`: 'S'
// asleep in its loop (one stopped before it got there would start from the
// latest deadline whatever its loop does), 'T' stopped.
void
await_state(pid_t pid, char state) {
  const std::string wanted = std::string("(rlock-watchdog) ") + state;
  for (int i = 0; i < 500; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    if (line.find(wanted) != std::string::npos) {
      return;
    }
    usleep(10'000);
  }
  FAIL("the watchdog never reached state " << state);
}

} // namespace

TEST_CASE("kill_at() never blocks on a stopped watchdog", "[forks_watchdog]") {
  using namespace std::chrono_literals;
  auto watchdog = idle_watchdog(boot_now() + 1h);
  await_state(watchdog.pid(), 'S');
  kill(watchdog.pid(), SIGSTOP);
  await_state(watchdog.pid(), 'T');
  // Far more deadlines than a pipe holds (64 KiB), as rlock renewing every
  // 33ms for hours would send.
  std::atomic<bool> done{false};
  std::thread renewals([&] {
    const auto base = boot_now() + 1h;
    for (int i = 1; i <= 100'000; ++i) {
      watchdog.kill_at(base + std::chrono::microseconds(i));
    }
    done = true;
  });
  for (int i = 0; i < 1000 && !done; ++i) {
    usleep(10'000);
  }
  const bool finished = done;
  // Continued, it drains the pipe, which frees a writer that blocked.
  kill(watchdog.pid(), SIGCONT);
  renewals.join();
  CHECK(finished);
  CHECK(watchdog.alive());
}

TEST_CASE("a watchdog continued after an old deadline passed fires at the "
          "deadline of now, not the old one",
          "[forks_watchdog]") {
  using namespace std::chrono_literals;
  auto watchdog = idle_watchdog(boot_now() + 300ms);
  await_state(watchdog.pid(), 'S');
  kill(watchdog.pid(), SIGSTOP);
  await_state(watchdog.pid(), 'T');
  // Moved on while it was stopped, as renewals do; then the old deadline
  // passes.
  watchdog.kill_at(boot_now() + 1h);
  usleep(600'000);
  kill(watchdog.pid(), SIGCONT);
  usleep(300'000);
  CHECK_FALSE(watchdog.fired());
  CHECK(watchdog.alive());
}

TEST_CASE("a dead watchdog shows: alive() turns false, death_fd() hangs up",
          "[forks_watchdog]") {
  auto watchdog = idle_watchdog(boot_now() + std::chrono::hours(1));
  CHECK(watchdog.alive());
  pollfd end{watchdog.death_fd(), 0, 0};
  CHECK(poll(&end, 1, 0) == 0);
  kill(watchdog.pid(), SIGKILL);
  CHECK(poll(&end, 1, 5000) == 1);
  CHECK((end.revents & (POLLHUP | POLLERR)) != 0);
  CHECK_FALSE(watchdog.alive());
  // rlock's later deadlines go nowhere, and cost nothing.
  watchdog.kill_at(boot_now() + std::chrono::hours(2));
  watchdog.disarm();
  CHECK_FALSE(watchdog.alive());
}

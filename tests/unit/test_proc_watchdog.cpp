#include <rlock/proc/process_info.hpp>
#include <rlock/proc/watchdog.hpp>
#include <rlock/util/error.hpp>

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
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

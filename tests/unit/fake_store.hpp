// A lock store without a server, and a clock that only moves when the code
// under test sleeps: the waiter's and renewer's decisions, seen directly.
#pragma once

#include <rlock/lock/store.hpp>
#include <rlock/redis/failure.hpp>

#include <algorithm>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlock::testing {

// Wake-ups the test hands out by hand.
class FakeWakeups final : public lock::Wakeups {
public:
  FakeWakeups(int& pending,
              int& breaks,
              int& listen_breaks,
              int& open,
              std::vector<std::string>& calls)
      : m_pending(pending), m_breaks(breaks), m_listen_breaks(listen_breaks),
        m_open(open), m_calls(calls) {
    ++m_open;
  }
  FakeWakeups(const FakeWakeups&) = delete;
  FakeWakeups& operator=(const FakeWakeups&) = delete;
  ~FakeWakeups() override {
    --m_open;
  }

  void
  listen() override {
    m_calls.push_back("listen");
    if (m_listen_breaks > 0) {
      --m_listen_breaks;
      throw redis::Failure(redis::FailureKind::closed, "wake list closed");
    }
  }

  int
  fd() const override {
    return 1000; // never polled: the fake clock's sleep ignores it
  }

  int
  take() override {
    if (m_breaks > 0) {
      --m_breaks;
      throw redis::Failure(redis::FailureKind::closed, "subscription closed");
    }
    return std::exchange(m_pending, 0);
  }

private:
  int& m_pending;
  int& m_breaks;
  int& m_listen_breaks;
  int& m_open;
  std::vector<std::string>& m_calls;
};

// Answers each acquire with the next scripted answer (the last one again
// once they run out); an answer may throw, as a failing server does. A peek
// takes its answer from the same script: Granted reads as Free.
class FakeStore final : public lock::LockStore {
public:
  using Answer = std::function<lock::AcquireAttempt()>;

  std::deque<Answer> acquire_answers;
  std::function<std::int64_t()> remaining = [] { return std::int64_t{-2}; };
  int pending_wakeups = 0;
  // How many times take() of a watch fails, as a broken subscription does.
  int wakeup_breaks = 0;
  // How many times listen() of a watch fails.
  int listen_breaks = 0;
  // How many wake-up sources are open now, and how many were at each leave.
  int open_wakeups = 0;
  std::vector<int> open_at_leave;

  // What the code under test did, in order: "acquire", "pttl", "watch",
  // "leave", "connect", "disconnect", "release", "check".
  std::vector<std::string> calls;

  std::unique_ptr<lock::LockStore>
  another() const override {
    throw std::logic_error("not faked");
  }

  std::string
  key_of(std::string_view name) const override {
    return "fake:" + std::string(name);
  }

  lock::AcquireAttempt
  acquire(const lock::LockRequest&, const lock::WaiterEntry& entry) override {
    calls.push_back("acquire");
    waited.push_back(entry.waited);
    last_queue_ttl = entry.queue_ttl;
    last_place_ttl = entry.place_ttl;
    return next_answer();
  }

  lock::PeekResult
  peek(std::string_view) override {
    calls.push_back("peek");
    auto answer = next_answer();
    if (auto* busy = std::get_if<lock::Busy>(&answer)) {
      return *busy;
    }
    return lock::Free{};
  }

  std::int64_t
  lease_remaining_ms(std::string_view) override {
    calls.push_back("pttl");
    return remaining();
  }

  lock::Renewal
  renew(std::string_view,
        const std::string&,
        Duration,
        lock::RenewMode) override {
    calls.push_back("renew");
    return renew_answer();
  }

  std::function<lock::Renewal()> renew_answer = [] {
    return lock::Renewal{true, 1000};
  };

  bool
  release(std::string_view, const std::string&) override {
    calls.push_back("release");
    return true;
  }

  void
  release_quietly(std::string_view, const std::string&) noexcept override {
    calls.push_back("release");
  }

  std::optional<Duration>
  check(std::string_view, const std::string&) override {
    calls.push_back("check");
    return check_answer();
  }

  std::function<std::optional<Duration>()> check_answer = [] {
    return std::optional<Duration>(std::chrono::seconds(1));
  };

  std::optional<lock::BrokenLock>
  force_release(std::string_view) override {
    return std::nullopt;
  }

  void
  leave_queue(std::string_view, const std::string&) override {
    calls.push_back("leave");
    open_at_leave.push_back(open_wakeups);
  }

  lock::Slot
  current_slot(std::string_view, Duration) override {
    return {};
  }

  void
  mark_slot_done(std::string_view, std::int64_t, Duration) override {
  }

  lock::StatusSnapshot
  read_locks(const std::vector<std::string>&) override {
    return {};
  }

  lock::StatusSnapshot
  list_locks(std::string_view) override {
    return {};
  }

  std::vector<lock::ServerFacts>
  examine() override {
    return {};
  }

  std::optional<lock::DeploymentState>
  deployment_state() override {
    return std::nullopt;
  }

  std::unique_ptr<lock::Wakeups>
  watch(std::string_view, const std::string&) override {
    return open_source("watch");
  }

  std::unique_ptr<lock::Wakeups>
  watch_releases(std::string_view) override {
    return open_source("watch releases");
  }

  void
  connect() override {
    calls.push_back("connect");
    if (connect_fails > 0) {
      --connect_fails;
      throw_failure();
    }
  }

  void
  disconnect() override {
    calls.push_back("disconnect");
  }

  void
  set_deadline(std::optional<BootTime>) override {
  }

  int
  idle_fd() const override {
    return -1;
  }

  bool
  idle_connection_broken() override {
    return false;
  }

  int watch_fails = 0;
  int connect_fails = 0;
  // Each acquire's WaiterEntry::waited, in order.
  std::vector<bool> waited;
  Duration last_queue_ttl{};
  Duration last_place_ttl{};
  std::function<void()> throw_failure;

  lock::AcquireAttempt
  next_answer() {
    const Answer answer = acquire_answers.front();
    if (acquire_answers.size() > 1) {
      acquire_answers.pop_front();
    }
    return answer();
  }

  int
  count(const std::string& call) const {
    return static_cast<int>(std::count(calls.begin(), calls.end(), call));
  }

private:
  std::unique_ptr<lock::Wakeups>
  open_source(const std::string& call) {
    calls.push_back(call);
    if (watch_fails > 0) {
      --watch_fails;
      throw_failure();
    }
    return std::make_unique<FakeWakeups>(
        pending_wakeups, wakeup_breaks, listen_breaks, open_wakeups, calls);
  }
};

// A clock that starts at an hour after boot and moves only in sleep().
struct FakeClock {
  BootTime now = BootTime(std::chrono::hours(1));
  // Wake-ups pending at the store: a sleep on them ends at once.
  const int* wakeups = nullptr;
  std::vector<Duration> sleeps;
  // Called at the start of each sleep, with its index: may deliver wake-ups
  // or return a signal number that ends the sleep at once.
  std::function<int(std::size_t)> during_sleep = [](std::size_t) { return 0; };

  int
  sleep(Duration duration) {
    const auto index = sleeps.size();
    sleeps.push_back(duration);
    if (const int signal = during_sleep(index)) {
      return signal;
    }
    if (wakeups != nullptr && *wakeups > 0) {
      return 0;
    }
    now += duration;
    return 0;
  }
};

} // namespace rlock::testing

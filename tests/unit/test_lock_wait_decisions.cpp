// The waiter's decisions on a fake store and a fake clock: when it asks,
// how long it sleeps, when it reconnects and when it gives up.
#include <rlock/lock/waiter.hpp>
#include <rlock/redis/failure.hpp>

#include <catch2/catch.hpp>

#include "fake_store.hpp"
#include <csignal>

using namespace std::chrono_literals;
using namespace rlock;
using rlock::testing::FakeClock;
using rlock::testing::FakeStore;

namespace {

const lock::LockRequest k_request{"job", "token-1", 30s, {}};

lock::Busy
busy(std::int64_t retry_ms, std::int64_t holder_ttl_ms = 30'000) {
  lock::Busy busy;
  busy.retry_ms = retry_ms;
  busy.holder = "alice@host:1";
  busy.holder_ttl_ms = holder_ttl_ms;
  return busy;
}

lock::Granted
won() {
  lock::Granted granted;
  granted.fence = 7;
  return granted;
}

FakeStore::Answer
answer(lock::AcquireAttempt attempt) {
  return [attempt] { return attempt; };
}

FakeStore::Answer
failure() {
  return []() -> lock::AcquireAttempt {
    throw redis::Failure(redis::FailureKind::closed,
                         "connection to fake closed by the server");
  };
}

struct Fixture {
  FakeStore store;
  FakeClock clock;
  lock::WaitHooks hooks{[this](int, Duration d) { return clock.sleep(d); },
                        [this] { return clock.now; },
                        [this] { ++before_first_sleep; }};
  int before_first_sleep = 0;

  Fixture() {
    clock.wakeups = &store.pending_wakeups;
    store.throw_failure = [] {
      throw redis::Failure(redis::FailureKind::closed,
                           "cannot connect to fake: refused");
    };
  }

  lock::WaitOutcome
  wait(const lock::WaitOptions& options) {
    return lock::wait_for_lock(store, k_request, options, hooks);
  }
};

std::vector<std::string>
without(std::vector<std::string> calls, const std::string& dropped) {
  std::erase(calls, dropped);
  return calls;
}

} // namespace

TEST_CASE("-n asks once, watches nothing and takes no place in the queue") {
  Fixture f;
  f.store.acquire_answers = {answer(busy(20'000))};
  const auto outcome =
      f.wait({.nonblock = true, .timeout = std::nullopt, .fair = true});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::timed_out);
  CHECK(std::get<lock::Busy>(outcome.attempt).holder == "alice@host:1");
  CHECK(f.store.calls == std::vector<std::string>{"acquire"});
  CHECK(f.store.last_queue_ttl == Duration::zero());
  CHECK(f.clock.sleeps.empty());
}

TEST_CASE("the work before the first sleep runs once, and only for a wait") {
  Fixture f;
  f.store.acquire_answers = {answer(won())};
  f.wait({});
  CHECK(f.before_first_sleep == 0);
  Fixture waiting;
  waiting.store.acquire_answers = {
      answer(busy(300)), answer(busy(300)), answer(busy(300)), answer(won())};
  waiting.wait({});
  CHECK(waiting.clock.sleeps.size() == 2);
  CHECK(waiting.before_first_sleep == 1);
}

TEST_CASE("a waiter watches, asks again, then sleeps until the lease ends") {
  Fixture f;
  f.store.acquire_answers = {
      answer(busy(300)), answer(busy(300)), answer(won())};
  const auto outcome = f.wait({});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::acquired);
  CHECK(std::get<lock::Granted>(outcome.attempt).fence == 7);
  CHECK_FALSE(outcome.uncertain);
  CHECK(f.store.calls
        == std::vector<std::string>{
            "acquire", "watch", "acquire", "listen", "acquire"});
  // The lease's end plus a little slack, not a poll.
  REQUIRE(f.clock.sleeps.size() == 1);
  CHECK(f.clock.sleeps[0] == 305ms);
}

TEST_CASE("the safety net alone looks at the lease, not the lock") {
  Fixture f;
  f.store.acquire_answers = {answer(busy(-1)), answer(busy(-1)), answer(won())};
  // Less than the holder's 30s: still the same holder.
  f.store.remaining = [] { return std::int64_t{25'000}; };
  f.clock.during_sleep = [&](std::size_t index) {
    if (index == 2) {
      ++f.store.pending_wakeups; // the release comes
    }
    return 0;
  };
  const auto outcome = f.wait({});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::acquired);
  CHECK(f.store.calls
        == std::vector<std::string>{"acquire",
                                    "watch",
                                    "acquire",
                                    "listen",
                                    "pttl",
                                    "listen",
                                    "pttl",
                                    "listen",
                                    "acquire"});
  // A third of the holder's 30s TTL at most, jittered in [5s, 10s].
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(f.clock.sleeps[i] >= 5s);
    CHECK(f.clock.sleeps[i] <= 10s);
  }
}

TEST_CASE("more lease left than the known holder could have: a full look") {
  Fixture f;
  f.store.acquire_answers = {
      answer(busy(-1, 3'000)), answer(busy(-1, 3'000)), answer(won())};
  f.store.remaining = [] { return std::int64_t{20'000}; };
  const auto outcome = f.wait({});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::acquired);
  CHECK(f.store.calls
        == std::vector<std::string>{
            "acquire", "watch", "acquire", "listen", "pttl", "acquire"});
  CHECK(f.clock.sleeps[0] >= 500ms);
  CHECK(f.clock.sleeps[0] <= 1s);
}

TEST_CASE("--fair queues, refreshes its place in [4s, 5s] and leaves at -w") {
  Fixture f;
  f.store.acquire_answers = {answer(busy(-1))};
  const auto outcome = f.wait({.timeout = 12s, .fair = true});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::timed_out);
  CHECK(f.store.last_queue_ttl == lock::k_queue_entry_ttl);
  REQUIRE(f.clock.sleeps.size() >= 3);
  Duration slept{};
  for (std::size_t i = 0; i + 1 < f.clock.sleeps.size(); ++i) {
    CHECK(f.clock.sleeps[i] >= 4s);
    CHECK(f.clock.sleeps[i] <= 5s);
    slept += f.clock.sleeps[i];
  }
  slept += f.clock.sleeps.back();
  CHECK(slept == 12s);
  // Each refresh is a full attempt: the place is renewed by acquiring. One
  // before the watch, one after it and one after each sleep.
  CHECK(f.store.count("acquire")
        == static_cast<int>(f.clock.sleeps.size()) + 2);
  CHECK(f.store.calls.back() == "leave");
  CHECK(f.store.count("leave") == 1);
}

lock::Busy
queued_behind_readers(std::int64_t retry_ms) {
  auto attempt = busy(retry_ms);
  attempt.shared_holders = true;
  attempt.place = 1;
  return attempt;
}

TEST_CASE("a waiter outside --fair that the store queued refreshes its "
          "place in [4s, 5s] and leaves at -w") {
  Fixture f;
  f.store.acquire_answers = {answer(queued_behind_readers(30'000))};
  const auto outcome = f.wait({.timeout = 12s});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::timed_out);
  CHECK(f.store.last_place_ttl == lock::k_queue_entry_ttl);
  CHECK(f.store.last_queue_ttl == Duration::zero());
  REQUIRE(f.clock.sleeps.size() >= 3);
  for (std::size_t i = 0; i + 1 < f.clock.sleeps.size(); ++i) {
    CHECK(f.clock.sleeps[i] >= 4s);
    CHECK(f.clock.sleeps[i] <= 5s);
  }
  // Each refresh is a full attempt, as for --fair.
  CHECK(f.store.count("acquire")
        == static_cast<int>(f.clock.sleeps.size()) + 2);
  CHECK(f.store.calls.back() == "leave");
}

TEST_CASE("every waiter outside --fair that waits offers a place; one the "
          "store did not queue does not refresh it") {
  Fixture f;
  f.store.acquire_answers = {answer(queued_behind_readers(20'000))};
  f.wait({.nonblock = true, .timeout = std::nullopt});
  CHECK(f.store.last_place_ttl == Duration::zero());
  f.wait({.timeout = 1s, .fair = true});
  CHECK(f.store.last_place_ttl == Duration::zero());
  CHECK(f.store.last_queue_ttl == lock::k_queue_entry_ttl);
  for (const std::int64_t limit : {std::int64_t{3}, lock::k_shared_limit}) {
    auto request = k_request;
    request.limit = limit;
    lock::wait_for_lock(f.store, request, {.timeout = 1s}, f.hooks);
    CHECK(f.store.last_place_ttl == lock::k_queue_entry_ttl);
  }
  Fixture plain;
  plain.store.acquire_answers = {answer(busy(30'000))};
  plain.wait({.timeout = 12s});
  CHECK(plain.store.last_place_ttl == lock::k_queue_entry_ttl);
  // Only the safety net's [5s, 10s], not the place's refresh.
  REQUIRE(plain.clock.sleeps.size() >= 2);
  for (std::size_t i = 0; i + 1 < plain.clock.sleeps.size(); ++i) {
    CHECK(plain.clock.sleeps[i] >= 5s);
  }
  // It leaves once, as it gives up (for the wake-up it may have been handed).
  CHECK(plain.store.count("leave") == 1);
}

TEST_CASE("-w bounds every sleep and the wait ends at its deadline") {
  Fixture f;
  f.store.acquire_answers = {answer(busy(30'000, 60'000))};
  const auto outcome = f.wait({.timeout = 1s});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::timed_out);
  REQUIRE(f.clock.sleeps.size() == 1);
  CHECK(f.clock.sleeps[0] == 1s);
}

// A release that comes between a waiter's last look and the close of its
// wake-up connection hands the wake-up to it on its way out: it stops
// listening first, then leaves, which wakes the next waiter when the lock is
// free (leave.lua).
TEST_CASE("a waiter outside the queue that gives up at -w stops listening, "
          "then leaves") {
  Fixture f;
  f.store.acquire_answers = {answer(busy(30'000, 60'000))};
  const auto outcome = f.wait({.timeout = 1s});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::timed_out);
  CHECK(std::get<lock::Busy>(outcome.attempt).place == 0);
  CHECK(f.store.calls.back() == "leave");
  CHECK(f.store.open_at_leave == std::vector<int>{0});
}

TEST_CASE("a waiter outside the queue that a signal ends stops listening, "
          "then leaves") {
  Fixture f;
  f.store.acquire_answers = {answer(busy(30'000, 60'000))};
  f.clock.during_sleep = [](std::size_t) { return SIGINT; };
  const auto outcome = f.wait({});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::interrupted);
  CHECK(f.store.calls.back() == "leave");
  CHECK(f.store.open_at_leave == std::vector<int>{0});
}

TEST_CASE("a failure while waiting: reconnect after a jittered backoff") {
  Fixture f;
  f.store.acquire_answers = {
      answer(busy(100)), answer(busy(100)), failure(), answer(won())};
  const auto outcome = f.wait({});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::acquired);
  // The failed attempt may have taken the lock unseen.
  CHECK(outcome.uncertain);
  CHECK(without(f.store.calls, "pttl")
        == std::vector<std::string>{"acquire",
                                    "watch",
                                    "acquire",
                                    "listen",
                                    "acquire",
                                    "disconnect",
                                    "connect",
                                    "watch",
                                    "acquire"});
  REQUIRE(f.clock.sleeps.size() == 2);
  CHECK(f.clock.sleeps[1] >= 50ms);
  CHECK(f.clock.sleeps[1] <= 100ms);
}

TEST_CASE("while the server stays away the backoff doubles up to 2s") {
  Fixture f;
  f.store.acquire_answers = {
      answer(busy(100)), answer(busy(100)), failure(), answer(won())};
  f.store.connect_fails = 7;
  const auto outcome = f.wait({});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::acquired);
  CHECK(f.store.count("connect") == 8);
  const std::vector<Duration> spans{
      100ms, 200ms, 400ms, 800ms, 1600ms, 2s, 2s, 2s};
  REQUIRE(f.clock.sleeps.size() == spans.size() + 1);
  for (std::size_t i = 0; i < spans.size(); ++i) {
    CHECK(f.clock.sleeps[i + 1] >= spans[i] / 2);
    CHECK(f.clock.sleeps[i + 1] <= spans[i]);
  }
}

TEST_CASE("a failure that outlasts -w is thrown") {
  Fixture f;
  f.store.acquire_answers = {answer(busy(100)), answer(busy(100)), failure()};
  f.store.connect_fails = 1'000;
  const auto start = f.clock.now;
  CHECK_THROWS_AS(f.wait({.timeout = 3s}), redis::Failure);
  CHECK(f.clock.now - start == 3s);
}

TEST_CASE("a first attempt that cannot connect is thrown, not waited out") {
  Fixture f;
  f.store.acquire_answers = {failure()};
  CHECK_THROWS_AS(f.wait({.timeout = 10s}), redis::Failure);
  CHECK(f.clock.sleeps.empty());
}

TEST_CASE("a failover under way at the first attempt is waited out, until "
          "-w ends") {
  const auto failing = [](redis::FailureKind kind) {
    return [kind]() -> lock::AcquireAttempt {
      throw redis::Failure(kind, "a failover");
    };
  };
  for (const auto kind :
       {redis::FailureKind::not_master, redis::FailureKind::unconfirmed}) {
    Fixture f;
    f.store.acquire_answers = {failing(kind), failing(kind), answer(won())};
    const auto outcome = f.wait({.timeout = 10s});
    CHECK(outcome.kind == lock::WaitOutcome::Kind::acquired);
    CHECK_FALSE(f.clock.sleeps.empty());
    // With -n it is reported at once.
    Fixture g;
    g.store.acquire_answers = {failing(kind)};
    CHECK_THROWS_AS(g.wait({.nonblock = true, .timeout = 10s}), redis::Failure);
  }
  Fixture f;
  f.store.acquire_answers = {failing(redis::FailureKind::unconfirmed)};
  f.store.connect_fails = 1'000;
  const auto start = f.clock.now;
  CHECK_THROWS_AS(f.wait({.timeout = 3s}), redis::Failure);
  CHECK(f.clock.now - start == 3s);
}

TEST_CASE("a signal during the wait ends it and leaves the queue") {
  Fixture f;
  f.store.acquire_answers = {answer(busy(-1))};
  f.clock.during_sleep = [](std::size_t) { return SIGTERM; };
  const auto outcome = f.wait({.timeout = std::nullopt, .fair = true});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::interrupted);
  CHECK(outcome.signal == SIGTERM);
  CHECK(f.store.calls.back() == "leave");
  // Not listening any more: the wake-up leave.lua pushes when the lock is
  // free goes to another waiter, not back to this one.
  CHECK(f.store.open_at_leave == std::vector<int>{0});
}

TEST_CASE("a broken watch counts as a wake-up and is made again") {
  Fixture f;
  f.store.acquire_answers = {answer(busy(-1)), answer(busy(-1)), answer(won())};
  f.store.remaining = [] { return std::int64_t{-1}; };
  f.store.wakeup_breaks = 1;
  const auto outcome = f.wait({});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::acquired);
  // A wake-up may have been lost: a full look, on a new watch.
  CHECK(f.store.calls
        == std::vector<std::string>{
            "acquire", "watch", "acquire", "listen", "watch", "acquire"});
}

TEST_CASE("a waiter listens after each look, so the winner listens no more") {
  Fixture f;
  f.store.acquire_answers = {
      answer(busy(-1)), answer(busy(-1)), answer(busy(-1)), answer(won())};
  f.store.remaining = [] { return std::int64_t{-1}; };
  f.clock.during_sleep = [&](std::size_t) {
    ++f.store.pending_wakeups; // a release wakes this waiter
    return 0;
  };
  const auto outcome = f.wait({});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::acquired);
  // A wake-up is taken once: listening again is a step of its own, after
  // the look, so that a waiter that gets in is no longer in line for the
  // wake-up of another release.
  CHECK(f.store.calls
        == std::vector<std::string>{"acquire",
                                    "watch",
                                    "acquire",
                                    "listen",
                                    "acquire",
                                    "listen",
                                    "acquire"});
}

TEST_CASE("an attempt after a sleep says it waited; the first two do not") {
  Fixture f;
  f.store.acquire_answers = {answer(busy(-1)), answer(busy(-1)), answer(won())};
  f.store.remaining = [] { return std::int64_t{-1}; };
  f.clock.during_sleep = [&](std::size_t) {
    ++f.store.pending_wakeups;
    return 0;
  };
  f.wait({});
  CHECK(f.store.waited == std::vector<bool>{false, false, true});
}

TEST_CASE("a semaphore's waiter leaves the line before a look of its own") {
  Fixture f;
  f.store.acquire_answers = {
      answer(busy(100)), answer(busy(100)), answer(busy(100)), answer(won())};
  auto request = k_request;
  request.limit = 3;
  lock::wait_for_lock(f.store, request, {}, f.hooks);
  // The lease's end, not a wake-up: the wait for a wake-up is dropped
  // before the attempt (watched again after it), so that the wake-up its
  // own acquire passes on cannot come back to it.
  CHECK(f.store.calls
        == std::vector<std::string>{"acquire",
                                    "watch",
                                    "acquire",
                                    "listen",
                                    "watch",
                                    "acquire",
                                    "listen",
                                    "watch",
                                    "acquire"});
  // A wake-up keeps the watch: the waiter that got it is out of line.
  Fixture woken;
  woken.store.acquire_answers = {
      answer(busy(-1)), answer(busy(-1)), answer(busy(-1)), answer(won())};
  woken.clock.during_sleep = [&](std::size_t) {
    ++woken.store.pending_wakeups;
    return 0;
  };
  lock::wait_for_lock(woken.store, request, {}, woken.hooks);
  CHECK(woken.store.count("watch") == 1);
}

TEST_CASE("a wake-up source that breaks as it listens is made again") {
  Fixture f;
  f.store.acquire_answers = {answer(busy(-1)), answer(busy(-1)), answer(won())};
  f.store.remaining = [] { return std::int64_t{-1}; };
  f.store.listen_breaks = 1;
  const auto outcome = f.wait({});
  CHECK(outcome.kind == lock::WaitOutcome::Kind::acquired);
  // Not slept on: watched again, and a look, since a wake-up may be lost.
  CHECK(f.clock.sleeps.empty());
  CHECK(f.store.calls
        == std::vector<std::string>{
            "acquire", "watch", "acquire", "listen", "watch", "acquire"});
}

TEST_CASE("rlock wait hears every release: it takes no waiter's wake-up") {
  Fixture f;
  // The fake's peek reads a grant as free.
  f.store.acquire_answers = {answer(busy(200)), answer(won())};
  lock::wait_until_free(f.store, "job", {.timeout = 5s}, f.hooks);
  CHECK(f.store.count("watch releases") == 1);
  CHECK(f.store.count("watch") == 0);
}

TEST_CASE("rlock wait only looks: it never takes the lock") {
  Fixture f;
  // The fake's peek reads a grant as free.
  f.store.acquire_answers = {answer(busy(200)), answer(won())};
  const auto outcome =
      lock::wait_until_free(f.store, "job", {.timeout = 5s}, f.hooks);
  CHECK(outcome.kind == lock::FreeWaitOutcome::Kind::free);
  CHECK(f.store.count("acquire") == 0);
  CHECK(f.store.count("peek") >= 1);
}

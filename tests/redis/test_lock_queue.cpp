// The --fair queue and the wake-ups, against a real redis-server.
#include <rlock/redis/subscription.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/store/protocol.hpp>
#include <rlock/util/random.hpp>

#include <catch2/catch.hpp>

#include <poll.h>

#include "server.hpp"
#include <cstdlib>
#include <thread>

using namespace std::chrono_literals;
using namespace rlock;
using namespace rlock::testing;

namespace {

lock::AcquireAttempt
fair_attempt(redis::Connection& c,
             const lock::LockKeys& keys,
             const std::string& token,
             Duration queue_ttl = 10s) {
  return lock::try_acquire(
      c, keys, token, 30s, k_test_holder, lock::WaiterEntry{queue_ttl});
}

// A waiter's attempt outside --fair (one that will wait).
lock::AcquireAttempt
waiter_attempt(redis::Connection& c,
               const lock::LockKeys& keys,
               const std::string& token,
               bool waited = false) {
  return lock::try_acquire(
      c, keys, token, 30s, k_test_holder, lock::WaiterEntry{{}, 10s, waited});
}

// Waits up to a second for a message on `subscription`.
int
messages_within_a_second(redis::Subscription& subscription) {
  pollfd entry{subscription.fd(), POLLIN, 0};
  ::poll(&entry, 1, 1000);
  return subscription.take_messages();
}

// Blocks on `lists` and waits up to `wait` for a wake-up.
int
wakeups_within(redis::WakeList& list, std::chrono::milliseconds wait) {
  list.listen();
  pollfd entry{list.fd(), POLLIN, 0};
  ::poll(&entry, 1, static_cast<int>(wait.count()));
  return list.take();
}

redis::WakeList
wake_list(const std::vector<std::string>& lists) {
  return redis::WakeList::open(test_endpoint(), {}, lists);
}

} // namespace

TEST_CASE("fair waiters queue in arrival order and take the lock in turn") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  REQUIRE(fair_attempt(c, keys, "holder").acquired);
  CHECK(fair_attempt(c, keys, "first").place == 1);
  CHECK(fair_attempt(c, keys, "second").place == 2);
  CHECK(fair_attempt(c, keys, "third").place == 3);
  // Refreshing keeps the place.
  CHECK(fair_attempt(c, keys, "first").place == 1);
  REQUIRE(lock::release(c, keys, "holder"));
  // The lock is free, but only the head may take it.
  const auto jumper =
      lock::try_acquire(c, keys, "outsider", 30s, k_test_holder);
  CHECK_FALSE(jumper.acquired);
  CHECK(jumper.retry_ms > 0);
  CHECK_FALSE(fair_attempt(c, keys, "second").acquired);
  REQUIRE(fair_attempt(c, keys, "first").acquired);
  REQUIRE(lock::release(c, keys, "first"));
  REQUIRE(fair_attempt(c, keys, "second").acquired);
  REQUIRE(lock::release(c, keys, "second"));
  REQUIRE(fair_attempt(c, keys, "third").acquired);
  REQUIRE(lock::release(c, keys, "third"));
  CHECK(c.command({"EXISTS", keys.queue, keys.alive}).integer == 0);
}

TEST_CASE("a waiter that stops refreshing leaves the queue by itself") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  REQUIRE(fair_attempt(c, keys, "holder").acquired);
  CHECK(fair_attempt(c, keys, "dies", 100ms).place == 1);
  CHECK(fair_attempt(c, keys, "lives").place == 2);
  REQUIRE(lock::release(c, keys, "holder"));
  CHECK_FALSE(fair_attempt(c, keys, "lives").acquired);
  std::this_thread::sleep_for(200ms);
  CHECK(fair_attempt(c, keys, "lives").acquired);
}

TEST_CASE("a release wakes the queue's head, or one waiter outside it") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  auto head = wake_list({keys.wake_list("head"), keys.wake_list()});
  auto second = wake_list({keys.wake_list("second"), keys.wake_list()});
  auto released =
      redis::Subscription::open(test_endpoint(), {}, {keys.released_channel()});
  REQUIRE(fair_attempt(c, keys, "holder").acquired);
  fair_attempt(c, keys, "head");
  fair_attempt(c, keys, "second");
  REQUIRE(lock::release(c, keys, "holder"));
  CHECK(wakeups_within(head, 1s) == 1);
  CHECK(wakeups_within(second, 100ms) == 0);
  // rlock wait hears every release.
  CHECK(messages_within_a_second(released) == 1);

  // Without a queue, one of the waiters outside it; a wake-up no waiter
  // blocks for yet waits for the first that does, and a second release
  // does not pile another on it.
  const auto plain = fresh_keys("q", "queue-test:");
  auto first = wake_list({plain.wake_list("first"), plain.wake_list()});
  auto other = wake_list({plain.wake_list("other"), plain.wake_list()});
  for (int i = 0; i < 2; ++i) {
    REQUIRE(lock::try_acquire(c, plain, "holder", 30s, k_test_holder).acquired);
    REQUIRE_FALSE(waiter_attempt(c, plain, "first").acquired);
    REQUIRE(lock::release(c, plain, "holder"));
  }
  CHECK(c.command({"LLEN", plain.wake_list()}).integer == 1);
  CHECK(c.command({"PTTL", plain.wake_list()}).integer > 0);
  CHECK(wakeups_within(first, 1s) == 1);
  CHECK(wakeups_within(other, 100ms) == 0);
  // The waiter that got in after a wait marks the lock for the others.
  REQUIRE(waiter_attempt(c, plain, "first", true).acquired);
  REQUIRE(lock::release(c, plain, "first"));
  CHECK(wakeups_within(other, 1s) == 1);
  CHECK(wakeups_within(first, 100ms) == 0);
}

TEST_CASE("a queued waiter that gets in or leaves takes its wake-up list") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  REQUIRE(fair_attempt(c, keys, "holder").acquired);
  fair_attempt(c, keys, "head");
  fair_attempt(c, keys, "quitter");
  REQUIRE(lock::release(c, keys, "holder"));
  REQUIRE(c.command({"LLEN", keys.wake_list("head")}).integer == 1);
  // In without taking it (its timer woke it first): the list goes.
  REQUIRE(fair_attempt(c, keys, "head").acquired);
  CHECK(c.command({"EXISTS", keys.wake_list("head")}).integer == 0);
  REQUIRE(lock::release(c, keys, "head"));
  REQUIRE(c.command({"LLEN", keys.wake_list("quitter")}).integer == 1);
  lock::leave_queue(c, keys, "quitter");
  CHECK(c.command({"EXISTS", keys.wake_list("quitter")}).integer == 0);
}

TEST_CASE("a lock nobody waited for wakes nobody and leaves no list") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  REQUIRE(lock::try_acquire(c, keys, "holder", 30s, k_test_holder).acquired);
  // -n: an attempt that will not wait.
  REQUIRE_FALSE(
      lock::try_acquire(c, keys, "nonblock", 30s, k_test_holder).acquired);
  REQUIRE(lock::release(c, keys, "holder"));
  REQUIRE(waiter_attempt(c, keys, "next").acquired);
  REQUIRE(lock::release(c, keys, "next"));
  CHECK(c.command({"EXISTS", keys.wake_list()}).integer == 0);
}

TEST_CASE("a waiter that is gone takes no wake-up") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  auto living = wake_list({keys.wake_list("living"), keys.wake_list()});
  {
    // Blocks first, so that the server would hand it the wake-up.
    auto gone = wake_list({keys.wake_list("gone"), keys.wake_list()});
    gone.listen();
    REQUIRE(wakeups_within(gone, 50ms) == 0);
  }
  REQUIRE(lock::try_acquire(c, keys, "holder", 30s, k_test_holder).acquired);
  REQUIRE_FALSE(waiter_attempt(c, keys, "living").acquired);
  REQUIRE(wakeups_within(living, 50ms) == 0);
  REQUIRE(lock::release(c, keys, "holder"));
  CHECK(wakeups_within(living, 1s) == 1);
}

TEST_CASE("a head that gives up hands the wake-up to the next waiter") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  auto next = wake_list({keys.wake_list("next"), keys.wake_list()});
  REQUIRE(fair_attempt(c, keys, "holder").acquired);
  fair_attempt(c, keys, "quitter");
  fair_attempt(c, keys, "next");
  REQUIRE(lock::release(c, keys, "holder"));
  CHECK(wakeups_within(next, 100ms) == 0);
  lock::leave_queue(c, keys, "quitter");
  CHECK(wakeups_within(next, 1s) == 1);
  CHECK(fair_attempt(c, keys, "next").acquired);
}

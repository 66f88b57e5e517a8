// The --fair queue and the wake-up channels, against a real redis-server.
#include <rlock/lock/protocol.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/redis/url.hpp>
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

// Waits up to a second for a message on `subscription`.
int
messages_within_a_second(redis::Subscription& subscription) {
  pollfd entry{subscription.fd(), POLLIN, 0};
  ::poll(&entry, 1, 1000);
  return subscription.take_messages();
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

TEST_CASE("a release wakes only the queue's head, or everyone without one") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  auto head = redis::Subscription::open(
      test_endpoint(), {}, {keys.wake_channel("head")});
  auto second = redis::Subscription::open(
      test_endpoint(), {}, {keys.wake_channel("second")});
  auto outside =
      redis::Subscription::open(test_endpoint(), {}, {keys.released_channel()});
  REQUIRE(fair_attempt(c, keys, "holder").acquired);
  fair_attempt(c, keys, "head");
  fair_attempt(c, keys, "second");
  REQUIRE(lock::release(c, keys, "holder"));
  CHECK(messages_within_a_second(head) == 1);
  CHECK(second.take_messages() == 0);
  CHECK(outside.take_messages() == 0);

  // Without a queue, the release is for everyone outside it.
  const auto plain = fresh_keys("q", "queue-test:");
  auto plain_outside = redis::Subscription::open(
      test_endpoint(), {}, {plain.released_channel()});
  REQUIRE(lock::try_acquire(c, plain, "holder", 30s, k_test_holder).acquired);
  REQUIRE(lock::release(c, plain, "holder"));
  CHECK(messages_within_a_second(plain_outside) == 1);
}

TEST_CASE("a head that gives up hands the wake-up to the next waiter") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  auto next = redis::Subscription::open(
      test_endpoint(), {}, {keys.wake_channel("next")});
  REQUIRE(fair_attempt(c, keys, "holder").acquired);
  fair_attempt(c, keys, "quitter");
  fair_attempt(c, keys, "next");
  REQUIRE(lock::release(c, keys, "holder"));
  CHECK(next.take_messages() == 0);
  lock::leave_queue(c, keys, "quitter");
  CHECK(messages_within_a_second(next) == 1);
  CHECK(fair_attempt(c, keys, "next").acquired);
}

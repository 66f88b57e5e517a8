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

Seen
fair_attempt(redis::Connection& c,
             const lock::LockKeys& keys,
             const std::string& token,
             Duration queue_ttl = 10s,
             bool waited = false) {
  return seen(lock::try_acquire(c,
                                keys,
                                token,
                                30s,
                                k_test_holder,
                                lock::WaiterEntry{queue_ttl, {}, waited}));
}

// A waiter's attempt outside --fair (one that will wait).
Seen
waiter_attempt(redis::Connection& c,
               const lock::LockKeys& keys,
               const std::string& token,
               bool waited = false) {
  return seen(lock::try_acquire(
      c, keys, token, 30s, k_test_holder, lock::WaiterEntry{{}, 10s, waited}));
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

// A waiter's wake-up connection, blocking on the lock's one wake-up list.
redis::WakeList
wake_list(const lock::LockKeys& keys) {
  return redis::WakeList::open(test_endpoint(), {}, {keys.wake_list()});
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
      seen(lock::try_acquire(c, keys, "outsider", 30s, k_test_holder));
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
  auto head = wake_list(keys);
  auto second = wake_list(keys);
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
  auto first = wake_list(plain);
  auto other = wake_list(plain);
  for (int i = 0; i < 2; ++i) {
    REQUIRE(seen(lock::try_acquire(c, plain, "holder", 30s, k_test_holder))
                .acquired);
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

TEST_CASE("a waiter that takes the head's wake-up passes it on, once") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  auto second = wake_list(keys);
  REQUIRE(fair_attempt(c, keys, "holder").acquired);
  fair_attempt(c, keys, "head");
  fair_attempt(c, keys, "second");
  // The second blocks first: the server hands it the head's wake-up.
  second.listen();
  auto head = wake_list(keys);
  head.listen();
  REQUIRE(lock::release(c, keys, "holder"));
  REQUIRE(wakeups_within(second, 1s) == 1);
  CHECK(wakeups_within(head, 100ms) == 0);
  // Its look after the wait finds the lock free for the head: it passes the
  // wake-up on, to the head, which blocks.
  CHECK_FALSE(fair_attempt(c, keys, "second", 10s, true).acquired);
  CHECK(wakeups_within(head, 1s) == 1);
  // It passes this wake-up on once only.
  CHECK_FALSE(fair_attempt(c, keys, "second", 10s, true).acquired);
  CHECK(c.command({"EXISTS", keys.wake_list()}).integer == 0);
  // The head gets in; the record of who passed it on goes.
  REQUIRE(fair_attempt(c, keys, "head", 10s, true).acquired);
  CHECK(c.command({"EXISTS", keys.wake_passed()}).integer == 0);
  REQUIRE(lock::release(c, keys, "head"));
  CHECK(wakeups_within(second, 1s) == 1);
  REQUIRE(fair_attempt(c, keys, "second", 10s, true).acquired);
}

TEST_CASE("a wake-up passed on while the head does not block goes round once") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  auto second = wake_list(keys);
  REQUIRE(fair_attempt(c, keys, "holder").acquired);
  fair_attempt(c, keys, "head");
  fair_attempt(c, keys, "second");
  // The head is stopped: only the second blocks.
  REQUIRE(lock::release(c, keys, "holder"));
  REQUIRE(wakeups_within(second, 1s) == 1);
  CHECK_FALSE(fair_attempt(c, keys, "second", 10s, true).acquired);
  // The wake-up it passed on comes back to it, and it keeps it: no loop
  // between the waiters and the server while the head sleeps.
  REQUIRE(wakeups_within(second, 1s) == 1);
  CHECK_FALSE(fair_attempt(c, keys, "second", 10s, true).acquired);
  CHECK(wakeups_within(second, 100ms) == 0);
  // The head's own look lets it in.
  CHECK(fair_attempt(c, keys, "head", 10s, true).acquired);
}

TEST_CASE("a lock nobody waited for wakes nobody and leaves no list") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  REQUIRE(
      seen(lock::try_acquire(c, keys, "holder", 30s, k_test_holder)).acquired);
  // -n: an attempt that will not wait.
  REQUIRE_FALSE(seen(lock::try_acquire(c, keys, "nonblock", 30s, k_test_holder))
                    .acquired);
  REQUIRE(lock::release(c, keys, "holder"));
  REQUIRE(waiter_attempt(c, keys, "next").acquired);
  REQUIRE(lock::release(c, keys, "next"));
  CHECK(c.command({"EXISTS", keys.wake_list()}).integer == 0);
}

TEST_CASE("a waiter that is gone takes no wake-up") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  auto living = wake_list(keys);
  {
    // Blocks first, so that the server would hand it the wake-up.
    auto gone = wake_list(keys);
    gone.listen();
    REQUIRE(wakeups_within(gone, 50ms) == 0);
  }
  REQUIRE(
      seen(lock::try_acquire(c, keys, "holder", 30s, k_test_holder)).acquired);
  REQUIRE_FALSE(waiter_attempt(c, keys, "living").acquired);
  REQUIRE(wakeups_within(living, 50ms) == 0);
  REQUIRE(lock::release(c, keys, "holder"));
  CHECK(wakeups_within(living, 1s) == 1);
}

TEST_CASE("a head that gives up hands the wake-up to the next waiter") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("q", "queue-test:");
  auto quitter = wake_list(keys);
  auto next = wake_list(keys);
  REQUIRE(fair_attempt(c, keys, "holder").acquired);
  fair_attempt(c, keys, "quitter");
  fair_attempt(c, keys, "next");
  // The head blocks first and takes the release's wake-up.
  quitter.listen();
  next.listen();
  REQUIRE(lock::release(c, keys, "holder"));
  REQUIRE(wakeups_within(quitter, 1s) == 1);
  CHECK(wakeups_within(next, 100ms) == 0);
  // It gives up without a look.
  lock::leave_queue(c, keys, "quitter");
  CHECK(wakeups_within(next, 1s) == 1);
  CHECK(fair_attempt(c, keys, "next").acquired);
}

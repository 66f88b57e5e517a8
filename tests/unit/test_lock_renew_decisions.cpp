// The renewer's decisions on a fake store: what counts as a renewal, what is
// a loss, and when it tries again. The clock is real, the leases short.
#include <rlock/lock/renewer.hpp>
#include <rlock/redis/failure.hpp>

#include <catch2/catch.hpp>

#include <poll.h>

#include "fake_store.hpp"
#include <atomic>
#include <thread>

using namespace std::chrono_literals;
using namespace rlock;
using rlock::testing::FakeStore;

namespace {

// The renewer owns its store; the test keeps a view of it, read only once
// the renewer has stopped.
struct Renewing {
  FakeStore* store;
  std::unique_ptr<lock::Renewer> renewer;

  explicit Renewing(std::function<void(FakeStore&)> setup,
                    Duration ttl = 300ms) {
    auto owned = std::make_unique<FakeStore>();
    store = owned.get();
    setup(*store);
    const auto timing = lock::make_timing(ttl, std::nullopt).value();
    renewer = std::make_unique<lock::Renewer>(
        std::move(owned), "job", "token-1", timing, boot_now());
    renewer->start();
  }

  // Waits for a loss for up to `limit`; returns it.
  std::optional<std::string>
  loss_within(Duration limit) {
    const auto give_up = boot_now() + limit;
    while (!renewer->check_loss() && boot_now() < give_up) {
      pollfd wake{renewer->wakeup_fd(), POLLIN, 0};
      ::poll(&wake, 1, 20);
      renewer->drain_wakeups();
    }
    renewer->stop();
    return renewer->loss();
  }
};

} // namespace

TEST_CASE("the thread starts only when due: half a renewal interval at most") {
  auto owned = std::make_unique<FakeStore>();
  FakeStore* store = owned.get();
  const auto timing = lock::make_timing(30s, std::nullopt).value();
  const auto sent = boot_now();
  lock::Renewer renewer(std::move(owned), "job", "token-1", timing, sent);
  // Not yet started: the owner is to look again well before the deadline.
  CHECK(renewer.next_check() < renewer.kill_deadline());
  CHECK(renewer.next_check() <= sent + timing.renew_interval / 2);
  renewer.stop();
  // Stopped before it started: it never starts, and never connects.
  renewer.start();
  CHECK(renewer.next_check() == renewer.kill_deadline());
  CHECK(store->count("connect") == 0);
}

TEST_CASE("renewals every third of the TTL keep the lease") {
  Renewing r([](FakeStore&) {});
  const auto start = boot_now();
  CHECK_FALSE(r.loss_within(1s));
  CHECK(r.renewer->kill_deadline() > start + 1s);
  // Four TTLs long: at least 3 renewals (every ttl/3), no storm.
  CHECK(r.store->count("renew") >= 3);
  CHECK(r.store->count("renew") <= 12);
}

TEST_CASE("a lease the store no longer has is lost at once") {
  Renewing r([](FakeStore& s) {
    s.renew_answer = [] { return lock::Renewal{false, -2}; };
  });
  const auto loss = r.loss_within(2s);
  REQUIRE(loss);
  CHECK_THAT(*loss, Catch::Contains("deleted or taken over"));
  CHECK(r.store->count("renew") == 1);
}

TEST_CASE("a lease gone before the thread started is lost when it starts, "
          "not at the first renewal") {
  // A server that restarted empty between the acquire and the thread's
  // start closed no connection the thread could watch.
  Renewing r(
      [](FakeStore& s) {
        s.check_answer = [] { return std::optional<Duration>(); };
      },
      30s);
  const auto loss = r.loss_within(2s);
  REQUIRE(loss);
  CHECK_THAT(*loss, Catch::Contains("deleted or taken over"));
  CHECK(r.store->count("check") == 1);
  CHECK(r.store->count("renew") == 0);
}

TEST_CASE("a first look that fails is followed by a renewal at once") {
  // The server may be restarting: renewing at once, and again until it
  // answers, finds out whether the lease survived.
  Renewing r(
      [](FakeStore& s) {
        s.check_answer = []() -> std::optional<Duration> {
          throw redis::Failure(redis::FailureKind::closed,
                               "cannot connect to fake: refused");
        };
        s.renew_answer = [] { return lock::Renewal{false, -2}; };
      },
      30s);
  const auto loss = r.loss_within(2s);
  REQUIRE(loss);
  CHECK_THAT(*loss, Catch::Contains("deleted or taken over"));
  CHECK(r.store->count("renew") == 1);
}

TEST_CASE("after request_stop() no renewal starts") {
  auto owned = std::make_unique<FakeStore>();
  auto renewals = std::make_shared<std::atomic<int>>(0);
  owned->renew_answer = [renewals]() -> lock::Renewal {
    ++*renewals;
    throw redis::Failure(redis::FailureKind::closed,
                         "cannot connect to fake: refused");
  };
  const auto timing = lock::make_timing(300ms, std::nullopt).value();
  lock::Renewer renewer(std::move(owned), "job", "token-1", timing, boot_now());
  renewer.start();
  // The first renewal is due at 100ms; failures are retried every 15ms.
  std::this_thread::sleep_for(200ms);
  renewer.request_stop();
  const int asked = renewals->load();
  std::this_thread::sleep_for(100ms);
  // At most the one under way when asked to stop.
  CHECK(renewals->load() <= asked + 1);
  CHECK(asked >= 1);
  renewer.stop();
}

TEST_CASE("a failed renewal is retried, and a later success counts") {
  Renewing r([](FakeStore& s) {
    auto failures = std::make_shared<int>(2);
    s.renew_answer = [failures] {
      if ((*failures)-- > 0) {
        throw redis::Failure(redis::FailureKind::closed,
                             "connection to fake closed by the server");
      }
      return lock::Renewal{true, 200};
    };
  });
  CHECK_FALSE(r.loss_within(800ms));
  CHECK(r.store->count("renew") >= 4);
}

TEST_CASE("renewals that fail until the deadline lose the lease, saying why") {
  Renewing r([](FakeStore& s) {
    s.renew_answer = []() -> lock::Renewal {
      throw redis::Failure(redis::FailureKind::closed,
                           "cannot connect to fake: refused");
    };
  });
  const auto loss = r.loss_within(2s);
  REQUIRE(loss);
  CHECK_THAT(*loss, Catch::Contains("could not renew it in time"));
  CHECK_THAT(*loss, Catch::Contains("refused"));
  // Retried more than once before giving up.
  CHECK(r.store->count("renew") >= 2);
}

TEST_CASE("a lease found shorter than counted on is lost") {
  Renewing r([](FakeStore& s) {
    s.renew_answer = [] { return lock::Renewal{true, 5}; };
  });
  const auto loss = r.loss_within(2s);
  REQUIRE(loss);
  CHECK_THAT(*loss, Catch::Contains("clock stepped forward"));
}

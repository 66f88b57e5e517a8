#include <rlock/lock/quorum_status.hpp>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using rlock::lock::LockState;
using rlock::lock::Slot;
using rlock::lock::StatusSnapshot;
using rlock::lock::quorum::latest_slot;
using rlock::lock::quorum::merge_status;
using rlock::lock::quorum::ServerStatus;

namespace {

LockState
held(const std::string& name, const std::string& token, std::int64_t fence) {
  LockState state;
  state.name = name;
  state.key = "rlock:{" + name + "}";
  state.held = true;
  state.token = token;
  state.fence = fence;
  state.ttl_ms = 5000;
  return state;
}

LockState
free_lock(const std::string& name) {
  LockState state;
  state.name = name;
  state.key = "rlock:{" + name + "}";
  return state;
}

ServerStatus
server(const std::string& address,
       std::vector<LockState> locks,
       std::int64_t now_ms = 1000) {
  StatusSnapshot snapshot;
  snapshot.server_now_ms = now_ms;
  snapshot.locks = std::move(locks);
  return ServerStatus{address, std::move(snapshot), ""};
}

ServerStatus
silent(const std::string& address) {
  return ServerStatus{address, {}, "timed out"};
}

} // namespace

TEST_CASE("status: one token on a quorum of servers holds the lock; it "
          "speaks for the lock") {
  const auto merged = merge_status({server("a:1", {held("job", "t1", 7)}),
                                    server("b:2", {held("job", "t1", 8)}),
                                    server("c:3", {free_lock("job")})},
                                   2);
  CHECK(merged.servers == 3);
  CHECK(merged.quorum == 2);
  REQUIRE(merged.locks.size() == 1);
  const auto& lock = merged.locks.front();
  REQUIRE(lock.quorum);
  CHECK(lock.quorum->agreed);
  CHECK(lock.held);
  CHECK(lock.token == "t1");
  CHECK(lock.fence == 7);
  REQUIRE(lock.quorum->servers.size() == 3);
  CHECK(lock.quorum->servers[2].server == "c:3");
  CHECK_FALSE(lock.quorum->servers[2].held);
}

TEST_CASE("status: a token on fewer than a quorum of servers does not hold "
          "it; the token on the most servers is shown") {
  const auto merged = merge_status({server("a:1", {held("job", "t1", 1)}),
                                    server("b:2", {held("job", "t2", 2)}),
                                    server("c:3", {held("job", "t2", 3)}),
                                    server("d:4", {free_lock("job")}),
                                    server("e:5", {free_lock("job")})},
                                   3);
  REQUIRE(merged.locks.size() == 1);
  REQUIRE(merged.locks.front().quorum);
  CHECK_FALSE(merged.locks.front().quorum->agreed);
  CHECK(merged.locks.front().token == "t2");
}

TEST_CASE("status: a server that did not answer counts against the quorum "
          "and is named in each lock and as unreachable") {
  const auto merged = merge_status({server("a:1", {held("job", "t1", 1)}),
                                    silent("b:2"),
                                    server("c:3", {free_lock("job")})},
                                   2);
  REQUIRE(merged.unreachable.size() == 1);
  CHECK(merged.unreachable.front().address == "b:2");
  CHECK(merged.unreachable.front().why == "timed out");
  const auto& lock = merged.locks.front();
  REQUIRE(lock.quorum);
  CHECK_FALSE(lock.quorum->agreed);
  REQUIRE(lock.quorum->servers.size() == 3);
  CHECK(lock.quorum->servers.back().server == "b:2");
  CHECK(lock.quorum->servers.back().error == "timed out");
}

TEST_CASE("status: locks in name order, each from every server that has it; "
          "the clock is the latest server's") {
  const auto merged =
      merge_status({server("a:1", {held("zeta", "t", 1)}, 5000),
                    server("b:2", {held("alpha", "u", 2)}, 7000)},
                   2);
  REQUIRE(merged.locks.size() == 2);
  CHECK(merged.locks[0].name == "alpha");
  REQUIRE(merged.locks[0].quorum);
  CHECK(merged.locks[0].quorum->servers.size() == 1);
  CHECK(merged.locks[1].name == "zeta");
  CHECK(merged.server_now_ms == 7000);
}

TEST_CASE("--once-per on a quorum: the latest slot any server is in, done "
          "when any recorded a success in it") {
  CHECK_FALSE(latest_slot({}));
  const auto slot = latest_slot({Slot{4, true, 100ms},
                                 Slot{5, false, 900ms},
                                 Slot{5, true, 800ms},
                                 Slot{5, false, 950ms}});
  REQUIRE(slot);
  CHECK(slot->number == 5);
  CHECK(slot->done);
  CHECK(slot->left == 800ms);
  // A success in an older slot does not make the current one done.
  CHECK_FALSE(latest_slot({Slot{4, true, 0ms}, Slot{5, false, 1s}})->done);
}

#include <rlock/lock/quorum_counts.hpp>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using rlock::lock::Busy;
using rlock::lock::quorum::count_renewal;
using rlock::lock::quorum::down_for;
using rlock::lock::quorum::quorum_remaining_ms;
using rlock::lock::quorum::RenewVote;
using rlock::lock::quorum::restarted_since;
using rlock::lock::quorum::split_backoff_span_ms;
using rlock::lock::quorum::split_vote;
using Kind = RenewVote::Kind;

namespace {

Busy
held_by(const std::string& holder) {
  Busy attempt;
  attempt.holder = holder;
  attempt.retry_ms = 30'000;
  return attempt;
}

} // namespace

TEST_CASE("count_renewal: a quorum of renewals holds it, until the earliest "
          "of the quorum's leases ends") {
  const auto renewal = count_renewal(
      {{Kind::held, 900}, {Kind::held, 500}, {Kind::not_held}}, 3, 2);
  REQUIRE(renewal);
  CHECK(renewal->held);
  CHECK(renewal->confirmed == 2);
  CHECK(renewal->remaining_before_ms == 500);
}

TEST_CASE("count_renewal: too many servers lost it or restarted: lost") {
  const auto renewal = count_renewal(
      {{Kind::held, 900}, {Kind::not_held}, {Kind::restarted}}, 3, 2);
  REQUIRE(renewal);
  CHECK_FALSE(renewal->held);
  CHECK(renewal->confirmed == 1);
}

TEST_CASE("count_renewal: silent servers, replicas that did not confirm in "
          "time among them, are not lost: try again") {
  // Two Sentinel members whose WAIT timed out: every master still holds it.
  CHECK_FALSE(
      count_renewal({{Kind::held, 900}, {Kind::silent}, {Kind::silent}}, 3, 2));
  CHECK_FALSE(
      count_renewal({{Kind::silent}, {Kind::silent}, {Kind::silent}}, 3, 2));
  // One lost copy: the silent server may still make the quorum.
  const auto renewal = count_renewal(
      {{Kind::held, 900}, {Kind::silent}, {Kind::not_held}}, 3, 2);
  CHECK_FALSE(renewal);
  const auto lost =
      count_renewal({{Kind::silent}, {Kind::not_held}, {Kind::not_held}}, 3, 2);
  REQUIRE(lost);
  CHECK_FALSE(lost->held);
}

TEST_CASE("quorum_remaining_ms: the quorum-th longest lease; -1 without "
          "expiry; -2 below a quorum") {
  CHECK(quorum_remaining_ms({100, 300, 200}, 2) == 200);
  CHECK(quorum_remaining_ms({-1, -1, 200}, 2) == -1);
  CHECK(quorum_remaining_ms({100}, 2) == -2);
}

TEST_CASE("restarted_since: a new run_id, or none where there was one, is a "
          "restart") {
  CHECK_FALSE(restarted_since("abc", "abc"));
  CHECK(restarted_since("abc", "def"));
  CHECK(restarted_since("abc", ""));
  CHECK_FALSE(restarted_since("", ""));
  CHECK_FALSE(restarted_since("", "def"));
}

TEST_CASE("split_vote: holders none of which can make a quorum") {
  // 1-1-1 with N=3: each contender got one server.
  CHECK(split_vote({held_by("a@h:1"), held_by("b@h:2")}, 0, 2));
  // One holder on two servers holds a quorum.
  CHECK_FALSE(split_vote({held_by("a@h:1"), held_by("a@h:1")}, 0, 2));
  // A server that did not answer may be the holder's second.
  CHECK_FALSE(split_vote({held_by("a@h:1")}, 1, 2));
  // N=5, Q=3: 2 + 1 + 1 (ours) with one silent: the 2 and the silent one
  // could be a quorum.
  CHECK_FALSE(
      split_vote({held_by("a@h:1"), held_by("a@h:1"), held_by("b@h:2")}, 1, 3));
  CHECK(
      split_vote({held_by("a@h:1"), held_by("b@h:2"), held_by("c@h:3")}, 0, 3));
  // Nothing said busy: not a split (too few answered).
  CHECK_FALSE(split_vote({}, 2, 2));
}

TEST_CASE("split_vote: a restart hold-back or a queue is no split") {
  auto held_back = held_by("");
  held_back.held_back = "the Redis server at x started 1s ago";
  CHECK_FALSE(split_vote({held_by("a@h:1"), held_back}, 0, 2));
  auto queued = held_by("a@h:1");
  queued.place = 2;
  CHECK_FALSE(split_vote({queued, held_by("b@h:2")}, 0, 2));
}

TEST_CASE("split_backoff_span_ms: short, doubling, at most a second") {
  CHECK(split_backoff_span_ms(1, 50) == 100);
  CHECK(split_backoff_span_ms(2, 50) == 200);
  CHECK(split_backoff_span_ms(1, 5) == 20);
  CHECK(split_backoff_span_ms(40, 50) == 1000);
}

TEST_CASE("down_for: 100 ms, doubling, at most 2 s") {
  CHECK(down_for(1) == 100ms);
  CHECK(down_for(2) == 200ms);
  CHECK(down_for(5) == 1600ms);
  CHECK(down_for(6) == 2000ms);
  CHECK(down_for(1000) == 2000ms);
}

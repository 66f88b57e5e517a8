#include <rlock/lock/quorum_acquire.hpp>
#include <rlock/lock/quorum_counts.hpp>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using rlock::Duration;
using rlock::lock::quorum::AcquireAnswer;
using rlock::lock::quorum::AcquireTally;
using rlock::lock::quorum::AcquireVerdict;
using rlock::lock::quorum::BusyVote;
using rlock::lock::quorum::clock_allowance;
using rlock::lock::quorum::count_check;
using rlock::lock::quorum::count_release;
using rlock::lock::quorum::free_in_ms;
using rlock::lock::quorum::judge_acquire;
using rlock::lock::quorum::meets_every_quorum;
using rlock::lock::quorum::not_won_retry_ms;
using rlock::lock::quorum::per_server_time;
using rlock::lock::quorum::retry_spread_ms;
using rlock::lock::quorum::spokesman;
using rlock::lock::quorum::Standing;
using rlock::lock::quorum::tally_acquire;
using rlock::lock::quorum::too_few_starts_known;
using rlock::lock::quorum::undo_all;
using rlock::lock::quorum::validity;
using Kind = AcquireAnswer::Kind;
using Verdict = AcquireVerdict::Kind;
using Members = std::vector<std::size_t>;

namespace {

AcquireAnswer
granted(std::size_t member, std::int64_t fence) {
  AcquireAnswer answer;
  answer.member = member;
  answer.kind = Kind::granted;
  answer.fence = fence;
  return answer;
}

AcquireAnswer
answer_of(std::size_t member, Kind kind) {
  AcquireAnswer answer;
  answer.member = member;
  answer.kind = kind;
  return answer;
}

BusyVote
held_by(const std::string& holder, std::int64_t retry_ms) {
  BusyVote vote;
  vote.holder = holder;
  vote.retry_ms = retry_ms;
  return vote;
}

// The verdict on `answers` with a quorum of `quorum` and `left` of validity.
AcquireVerdict
verdict_on(const std::vector<AcquireAnswer>& answers,
           int quorum,
           Duration left = 1s) {
  return judge_acquire(tally_acquire(answers), quorum, left);
}

} // namespace

// The acquire's count.

TEST_CASE("3 of 5 granted in time: won, the fence is the highest of theirs, "
          "undone only where it may have been granted") {
  const auto verdict = verdict_on({granted(0, 7),
                                   granted(1, 9),
                                   answer_of(2, Kind::busy),
                                   granted(3, 8),
                                   answer_of(4, Kind::no_answer)},
                                  3);
  CHECK(verdict.kind == Verdict::won);
  CHECK(verdict.fence == 9);
  CHECK(verdict.undo == Members{4});
}

TEST_CASE("2 of 3 granted but past validity: not won, undo all granted") {
  const std::vector<AcquireAnswer> answers{
      granted(0, 4), granted(1, 5), answer_of(2, Kind::busy)};
  const auto verdict = verdict_on(answers, 2, -1ms);
  CHECK(verdict.kind == Verdict::too_late);
  CHECK(verdict.undo == Members{0, 1});
  // No validity left at all is as late.
  CHECK(verdict_on(answers, 2, 0ms).kind == Verdict::too_late);
  CHECK(verdict_on(answers, 2, 1ms).kind == Verdict::won);
}

TEST_CASE("2 of 5 granted: short of a quorum of 3, undo the grants and every "
          "server that may have granted it") {
  const auto verdict = verdict_on({granted(0, 1),
                                   answer_of(1, Kind::no_answer),
                                   answer_of(2, Kind::busy),
                                   granted(3, 2),
                                   answer_of(4, Kind::busy)},
                                  3);
  CHECK(verdict.kind == Verdict::too_few);
  CHECK(verdict.undo == Members{0, 3, 1});
}

TEST_CASE("N/2 grants are no quorum: 2 of 4 and 1 of 2 lose, 3 of 4 wins") {
  const std::vector<AcquireAnswer> half_of_four{granted(0, 1),
                                                granted(1, 1),
                                                answer_of(2, Kind::busy),
                                                answer_of(3, Kind::busy)};
  CHECK(verdict_on(half_of_four, 4 / 2 + 1).kind == Verdict::too_few);
  CHECK(verdict_on({granted(0, 1), answer_of(1, Kind::busy)}, 2 / 2 + 1).kind
        == Verdict::too_few);
  CHECK(verdict_on({granted(0, 1),
                    granted(1, 1),
                    granted(2, 1),
                    answer_of(3, Kind::busy)},
                   4 / 2 + 1)
            .kind
        == Verdict::won);
}

TEST_CASE("a grant whose replicas did not confirm it in time (WAIT) does not "
          "count, and is undone even when the others win") {
  auto unconfirmed = granted(2, 9);
  unconfirmed.unconfirmed = true;
  const auto tally = tally_acquire({granted(0, 3), granted(1, 4), unconfirmed});
  CHECK(tally.granted == Members{0, 1});
  CHECK(tally.fences == std::vector<std::int64_t>{3, 4});
  CHECK(tally.maybe == Members{2});
  CHECK(tally.said_no.empty());
  const auto verdict = judge_acquire(tally, 2, 1s);
  CHECK(verdict.kind == Verdict::won);
  CHECK(verdict.fence == 4);
  CHECK(verdict.undo == Members{2});
  // Two of three unconfirmed: no quorum, all three undone.
  auto also = granted(1, 4);
  also.unconfirmed = true;
  CHECK(verdict_on({granted(0, 3), also, unconfirmed}, 2).undo
        == Members{0, 1, 2});
}

TEST_CASE("a server within its restart grace: its grant does not count, is "
          "undone, and it says why") {
  auto restarted = granted(1, 5);
  restarted.held_back = true;
  const auto tally = tally_acquire({granted(0, 4), restarted});
  CHECK(tally.granted == Members{0});
  CHECK(tally.maybe == Members{1});
  CHECK(tally.said_no == std::vector<std::size_t>{1});
  CHECK(judge_acquire(tally, 2, 1s).kind == Verdict::too_few);
}

TEST_CASE("a server that cannot say when it started never counts; when too "
          "few can, the acquire fails") {
  auto unknown = granted(0, 4);
  unknown.start_unknown = true;
  auto unknown_busy = answer_of(1, Kind::busy);
  unknown_busy.start_unknown = true;
  const auto tally = tally_acquire({unknown, unknown_busy, granted(2, 3)});
  CHECK(tally.granted == Members{2});
  CHECK(tally.maybe == Members{0});
  CHECK(tally.said_no == std::vector<std::size_t>{0, 1});
  CHECK(tally.start_unknown == 2);
  CHECK(too_few_starts_known(tally, 3, 2));
  CHECK_FALSE(too_few_starts_known(tally, 5, 3));
}

TEST_CASE("a server the script never reached is neither a grant nor undone; "
          "one that did not answer is undone") {
  const auto tally = tally_acquire({answer_of(0, Kind::unsent),
                                    answer_of(1, Kind::no_answer),
                                    granted(2, 1)});
  CHECK(tally.granted == Members{2});
  CHECK(tally.maybe == Members{1});
  CHECK(undo_all(tally) == Members{2, 1});
  CHECK(tally.said_no.empty());
}

TEST_CASE("a busy server says why not; it is not undone") {
  const auto tally = tally_acquire(
      {answer_of(0, Kind::busy), granted(1, 1), answer_of(2, Kind::busy)});
  CHECK(tally.said_no == std::vector<std::size_t>{0, 2});
  CHECK(undo_all(tally) == Members{1});
}

// The lease's time.

TEST_CASE("validity = TTL - elapsed - drift; the drift is 1% of the TTL plus "
          "2 ms") {
  CHECK(clock_allowance(10s) == 102ms);
  CHECK(clock_allowance(1s) == 12ms);
  CHECK(validity(10s, 3s, clock_allowance(10s)) == 6898ms);
  // Granted 9.9 s into a 10 s lease: the drift eats the rest.
  CHECK(validity(10s, 9900ms, clock_allowance(10s)) < 0ms);
}

TEST_CASE("an acquire waits for each server a twentieth of the TTL, at most "
          "50 ms") {
  CHECK(per_server_time(30s) == 50ms);
  CHECK(per_server_time(1s) == 50ms);
  CHECK(per_server_time(200ms) == 10ms);
}

// Fences and slots written back.

TEST_CASE("a write meets every later quorum when it reaches N - Q + 1 "
          "servers") {
  CHECK(meets_every_quorum(3, 2) == 2);
  CHECK(meets_every_quorum(5, 3) == 3);
  CHECK(meets_every_quorum(4, 3) == 2);
  CHECK(meets_every_quorum(1, 1) == 1);
}

// When not won: who speaks, when to look again.

TEST_CASE("the holder most servers name speaks for them all; on a tie, the "
          "one that got there first") {
  const auto speaker = [](const std::vector<BusyVote>& busy) {
    const auto at = spokesman(busy);
    REQUIRE(at);
    return busy[*at].holder + (busy[*at].held_back.empty() ? "" : " (held)");
  };
  CHECK_FALSE(spokesman({}));
  CHECK(speaker({held_by("a", 1), held_by("b", 1), held_by("b", 1)}) == "b");
  CHECK(speaker({held_by("a", 1), held_by("b", 1)}) == "a");
  CHECK(
      speaker(
          {held_by("a", 1), held_by("b", 1), held_by("b", 1), held_by("a", 1)})
      == "b");
  // A hold-back is another answer than the holder's.
  auto held_back = held_by("a", 1);
  held_back.held_back = "restarted 1s ago";
  CHECK(speaker({held_back, held_by("a", 1), held_by("a", 1)}) == "a");
  CHECK(speaker({held_back, held_back, held_by("a", 1)}) == "a (held)");
}

TEST_CASE("not won: look again when enough leases end for a quorum; at once "
          "(spread at random) when enough servers are free") {
  // 5 servers, quorum 3: 2 free, 3 held for 300, 100, 200 ms: one more
  // free after 100 ms.
  CHECK(not_won_retry_ms(
            {held_by("a", 300), held_by("a", 100), held_by("a", 200)}, 5, 3)
        == 100);
  // 5 servers, 1 free: two more needed, the second lease to end.
  CHECK(not_won_retry_ms({held_by("a", 300),
                          held_by("a", 100),
                          held_by("a", 200),
                          held_by("a", 400)},
                         5,
                         3)
        == 200);
  // 3 free: now.
  CHECK(not_won_retry_ms({held_by("a", 300), held_by("a", 100)}, 5, 3) == 0);
  // A lease without expiry among those needed: no hint.
  CHECK(not_won_retry_ms({held_by("a", -1), held_by("a", -1)}, 3, 2) == -1);
  CHECK(retry_spread_ms(50) == 100);
  CHECK(retry_spread_ms(2) == 20);
}

TEST_CASE("free_in_ms: 0 once enough are free, -1 when waiting frees too "
          "few") {
  CHECK(free_in_ms({}, 2, 2) == 0);
  CHECK(free_in_ms({500}, 0, 2) == -1);
  CHECK(free_in_ms({500, 200}, 0, 2) == 500);
}

// Release and check.

TEST_CASE("release: held until now when at least one server released it and "
          "with the silent ones they make a quorum") {
  CHECK(count_release(2, 0, 2) == Standing::held);
  CHECK(count_release(1, 1, 2) == Standing::held);
  // One released it, two said it was not ours: too few had it.
  CHECK(count_release(1, 0, 2) == Standing::not_held);
  CHECK(count_release(0, 1, 2) == Standing::not_held);
}

TEST_CASE("release: none released it and a quorum were silent: whether it "
          "was held cannot be told") {
  CHECK(count_release(0, 2, 2) == Standing::unknown);
  CHECK(count_release(0, 3, 2) == Standing::unknown);
}

TEST_CASE("check: ours on a quorum, until the quorum's earliest lease ends; "
          "lost when too many lost it; else cannot be told") {
  const auto held = count_check({900, 300, 500}, 0, 3, 2);
  CHECK(held.standing == Standing::held);
  CHECK(held.remaining_ms == 500);
  CHECK(count_check({-1, -1}, 1, 3, 2).remaining_ms == -1);
  CHECK(count_check({900}, 2, 3, 2).standing == Standing::not_held);
  // One holds it, one lost it, one silent: the silent one may make it two.
  CHECK(count_check({900}, 1, 3, 2).standing == Standing::unknown);
  CHECK(count_check({}, 0, 3, 2).standing == Standing::unknown);
}

// The quorum store's acquire: each server's answer heard once
// (hear_acquire), counted and judged by the pure rules of quorum_acquire.cpp
// and quorum_counts.cpp, then the fence written back or the grants undone.

#include <rlock/lock/quorum_acquire.hpp>
#include <rlock/lock/quorum_counts.hpp>
#include <rlock/lock/restart_grace.hpp>
#include <rlock/store/quorum_store.hpp>
#include <rlock/store/quorum_store_parts.hpp>
#include <rlock/store/replies.hpp>
#include <rlock/util/random.hpp>
#include <rlock/util/text.hpp>

namespace rlock::lock {

using namespace quorum_parts;

namespace {

// What a server's answer to an acquire says: for the count (`vote`) and,
// when it says why not, for the waiter (`said`); why its start cannot be
// told, when that keeps its grant from counting; what its reply could not
// be read as (a key of another type, for a layout that never takes one).
struct Heard {
  quorum::AcquireAnswer vote;
  Busy said;
  std::optional<redis::Failure> unknown_start;
  std::optional<redis::Failure> unreadable;
};

Heard
hear_acquire(const QuorumStore::Answer& answer,
             const LockLayout& layout,
             const RestartGrace& grace,
             const std::string& what) {
  using Kind = quorum::AcquireAnswer::Kind;
  Heard heard;
  heard.vote.member = answer.member;
  if (!answer.reply) {
    heard.vote.kind = answer.sent ? Kind::no_answer : Kind::unsent;
    return heard;
  }
  AcquireAttempt attempt;
  try {
    attempt = layout.decode_acquire(*answer.reply, what);
  } catch (const redis::Failure& failure) {
    heard.vote.kind = Kind::no_answer;
    // An error reply counts as no answer, as before; only a reply of
    // another shape (a key the layout never takes) is told to the user.
    if (failure.failure_kind() == redis::FailureKind::unexpected_reply) {
      heard.unreadable = failure;
    }
    return heard;
  }
  // A server that will not say when it started may have restarted empty
  // a moment ago: it never counts (one server refuses the same way).
  heard.vote.start_unknown =
      grace.length > Duration::zero() && answer.unknown_start.has_value();
  if (heard.vote.start_unknown) {
    heard.unknown_start = answer.unknown_start;
  }
  const auto held_back_by =
      answer.started && !heard.vote.start_unknown
          ? held_back(answer.address, *answer.started, grace, boot_now())
          : std::nullopt;
  heard.vote.held_back = held_back_by.has_value();
  heard.vote.unconfirmed = !answer.counts();
  if (auto* busy = std::get_if<Busy>(&attempt)) {
    heard.vote.kind = Kind::busy;
    heard.said = std::move(*busy);
    return heard;
  }
  heard.vote.kind = Kind::granted;
  heard.vote.fence = std::get<Granted>(attempt).fence;
  if (held_back_by) {
    heard.said = *held_back_by;
  } else if (heard.vote.start_unknown) {
    heard.said.held_back = answer.unknown_start->what();
  }
  return heard;
}

// The parts of a "not granted" answer the quorum counts.
std::vector<quorum::BusyVote>
busy_votes(const std::vector<Busy>& busy) {
  std::vector<quorum::BusyVote> votes;
  for (const auto& attempt : busy) {
    votes.push_back(quorum::BusyVote{attempt.holder,
                                     attempt.held_back,
                                     attempt.place,
                                     attempt.limit_conflict.has_value(),
                                     attempt.retry_ms});
  }
  return votes;
}

} // namespace

AcquireAttempt
QuorumStore::acquire(const LockRequest& request, const WaiterEntry& entry) {
  const int quorum = m_quorum;
  const int servers = static_cast<int>(m_members.size());
  const std::string what = "cannot acquire lock " + quote(request.name);
  const Duration per_server = per_server_time(request.ttl);
  const BootTime sent = boot_now();
  const auto answers = round(
      all_members(), m_layout->acquire_call(request, entry), per_server, true);
  std::vector<quorum::AcquireAnswer> votes;
  // Per answer: what it says when it says why not.
  std::vector<Busy> said;
  // The servers whose start cannot be told, while a grace is asked for.
  std::vector<redis::Failure> unknown;
  // The replies that could not be read.
  std::vector<redis::Failure> unreadable;
  for (const auto& answer : answers) {
    auto heard =
        hear_acquire(answer, *m_layout, m_deployment.restart_grace, what);
    if (heard.unknown_start) {
      unknown.push_back(*heard.unknown_start);
    }
    if (heard.unreadable) {
      unreadable.push_back(*heard.unreadable);
    }
    votes.push_back(heard.vote);
    said.push_back(std::move(heard.said));
  }
  const auto tally = quorum::tally_acquire(votes);
  const Duration allowance = clock_allowance(request.ttl);
  auto verdict = quorum::judge_acquire(
      tally,
      quorum,
      quorum::validity(request.ttl, boot_now() - sent, allowance));
  std::string short_by;
  if (verdict.kind == quorum::AcquireVerdict::Kind::too_late) {
    short_by = "too late to count";
  } else if (verdict.kind == quorum::AcquireVerdict::Kind::won) {
    if (raise_fence(reachable(answers),
                    m_layout->raise_fence_call(
                        request.name, request.token, verdict.fence),
                    per_server)) {
      m_granted.clear();
      for (const auto member : tally.granted) {
        m_granted[member] = m_members[member].run_id;
      }
      m_splits = 0;
      undo(verdict.undo, request.name, request.token, per_server);
      Granted won;
      won.fence = verdict.fence;
      won.sent = sent;
      won.clock_allowance = allowance;
      won.granted = static_cast<int>(tally.granted.size());
      won.servers = servers;
      return won;
    }
    short_by = "too few servers took its fence";
    verdict.undo = quorum::undo_all(tally);
  }
  undo(verdict.undo, request.name, request.token, per_server);
  if (!unreadable.empty()) {
    // A server that says the key is not a lock of this layout (or answers
    // in another shape): never taken, and the user is told so.
    throw unreadable.front();
  }
  if (quorum::too_few_starts_known(tally, servers, quorum)) {
    // Too few servers can say when they started for any quorum to count.
    throw unknown.front();
  }
  require_quorum(answers, what);
  std::vector<Busy> busy;
  for (const auto index : tally.said_no) {
    busy.push_back(said[index]);
  }
  auto result = not_won(
      busy, static_cast<int>(tally.granted.size()), request.ttl, short_by);
  const int silent = servers - answered(answers);
  if (quorum::split_vote(busy_votes(busy), silent, quorum)) {
    // Nobody holds it: every contender of the split undoes what it got.
    // Look again soon, at random, so that one of us wins next time.
    ++m_splits;
    result.retry_ms =
        1
        + static_cast<std::int64_t>(
            random_below_or_equal(static_cast<std::uint64_t>(
                quorum::split_backoff_span_ms(m_splits, to_ms(per_server)))));
  } else {
    m_splits = 0;
  }
  return result;
}

Busy
QuorumStore::not_won(const std::vector<Busy>& busy,
                     int granted,
                     Duration ttl,
                     const std::string& short_by) const {
  const int servers = static_cast<int>(m_members.size());
  const auto votes = busy_votes(busy);
  Busy result;
  // The holder most servers name speaks for them all.
  if (const auto spokesman = quorum::spokesman(votes)) {
    result = busy[*spokesman];
  } else {
    result.holder = "no quorum (" + std::to_string(granted) + " of "
                    + std::to_string(servers) + " servers granted it, quorum "
                    + std::to_string(m_quorum)
                    + (short_by.empty() ? "" : ", but " + short_by) + ")";
  }
  // A lock whose library sends no wake-up is looked at again (as on one
  // server), whoever speaks for the servers.
  result.polled = result.polled || m_layout->polled();
  result.retry_ms = quorum::not_won_retry_ms(votes, servers, m_quorum);
  if (result.retry_ms == 0) {
    // Enough servers are not held, but others asked at the same moment, or
    // some were slow: back off a little, at random, so that one of us wins
    // next time.
    result.retry_ms = static_cast<std::int64_t>(
        random_below_or_equal(static_cast<std::uint64_t>(
            quorum::retry_spread_ms(to_ms(per_server_time(ttl))))));
  }
  return result;
}

} // namespace rlock::lock

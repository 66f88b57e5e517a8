#pragma once

#include <rlock/util/duration.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

// How the quorum store (lock/quorum_store.cpp) counts the servers' answers
// to an acquire: who granted it, who may have, whether the grants win, and
// on which servers to undo them. Pure, unit-tested in
// test_lock_quorum_rules.
namespace rlock::lock::quorum {

// An acquire waits at most this long for each server (per_server_time()).
inline constexpr Duration k_longest_per_server = std::chrono::milliseconds(50);

// What one server answered an acquire.
struct AcquireAnswer {
  enum class Kind {
    unsent,    // the script never went out (no connection)
    no_answer, // sent, but no reply that tells (none in time, an error,
               // one that does not decode): it may have granted it
    granted,   // it granted the lock
    busy,      // it did not (held by another, the queue, a limit)
  };
  std::size_t member = 0;
  Kind kind = Kind::unsent;
  // granted: the fence it handed out.
  std::int64_t fence = 0;
  // granted, but the grant does not count: replicas did not confirm it in
  // time (WAIT), or an error came with it.
  bool unconfirmed = false;
  // It restarted within the restart grace: its grant does not count, and
  // it says why (a hold-back). Only when its start is known.
  bool held_back = false;
  // It cannot say when it started while a restart grace is asked for: its
  // grant never counts, and it says why.
  bool start_unknown = false;
};

// The answers of one acquire, counted.
struct AcquireTally {
  // The servers whose grant counts, and the fence each handed out.
  std::vector<std::size_t> granted;
  std::vector<std::int64_t> fences;
  // The servers that may have granted it, or granted it without its
  // counting: the acquire is undone on them whatever the verdict.
  std::vector<std::size_t> maybe;
  // The answers (indexes into the answers counted) that say why not: a
  // busy server, or a grant held back (restart grace, unknown start).
  std::vector<std::size_t> said_no;
  // How many servers cannot say when they started, while a grace is asked.
  int start_unknown = 0;
};

AcquireTally tally_acquire(const std::vector<AcquireAnswer>& answers);

// The allowance for servers' clocks that run faster than ours: 1% of the
// TTL plus 2 ms. The lease counts as taken this much before the send.
Duration clock_allowance(Duration ttl);

// How long an acquire waits for each server: a twentieth of the TTL, at
// most 50 ms.
Duration per_server_time(Duration ttl);

// What is left of a lease of `ttl` granted `elapsed` after its send, once
// the clock allowance is taken off (Redlock's validity): the grants count
// only while it is above zero.
Duration validity(Duration ttl, Duration elapsed, Duration allowance);

// What an acquire's grants come to.
struct AcquireVerdict {
  enum class Kind {
    won,      // a quorum granted it in time: write `fence` back, then held
    too_late, // a quorum granted it, but past the validity: not held
    too_few,  // fewer than a quorum granted it: not held
  };
  Kind kind = Kind::too_few;
  // won: the fence handed out, the highest of the granting servers'.
  std::int64_t fence = 0;
  // The servers to undo the acquire on: when won, those that may have
  // granted it; else every server that granted it or may have.
  std::vector<std::size_t> undo;
};

// Returns the verdict on `tally` for `quorum`, with `validity` left.
AcquireVerdict
judge_acquire(const AcquireTally& tally, int quorum, Duration validity);

// The servers to undo an acquire on when it is not held after all (its
// fence could not be written back): every one that granted it or may have.
std::vector<std::size_t> undo_all(const AcquireTally& tally);

// True when too few servers can say when they started for any quorum to
// count (a restart grace is asked for): the acquire fails as they do.
bool too_few_starts_known(const AcquireTally& tally, int servers, int quorum);

} // namespace rlock::lock::quorum

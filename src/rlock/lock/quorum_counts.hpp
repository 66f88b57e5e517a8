#pragma once

#include <rlock/lock/lease.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// The decisions of the quorum store (store/quorum_store.cpp) that need no
// server: how answers count. Pure, unit-tested in test_lock_quorum_counts.
namespace rlock::lock::quorum {

// What one server said to a renewal, as the quorum counts it.
struct RenewVote {
  enum class Kind {
    held,      // renewed; remaining_before_ms is the PTTL it found
    not_held,  // the lock is not ours there (gone, or another's)
    restarted, // the server restarted since it granted the lock
    silent,    // no answer that counts: no reply, an error, or replicas
               // that did not confirm it in time (WAIT)
  };
  Kind kind = Kind::silent;
  std::int64_t remaining_before_ms = -2;
};

// Returns the renewal the votes of the `asked` servers make (held, with the
// PTTL until fewer than `quorum` hold it, when `quorum` renewed it; not held
// when so many said "not held" or restarted that no retry can reach a
// quorum), or nothing when it cannot be told yet: the step may be retried.
// A silent server, one whose replicas did not confirm in time among them,
// is never counted as lost.
std::optional<Renewal>
count_renewal(const std::vector<RenewVote>& votes, int asked, int quorum);

// What the answers to a release or a check say of the lock.
enum class Standing {
  held,     // ours on a quorum (a release: until it released it)
  not_held, // too few servers have it (had it) for a quorum
  unknown,  // too few answered to tell: the step fails (may be retried)
};

// A release that `released` servers said they released (it was ours there)
// and `silent` did not answer (or the answer does not count): unknown when
// none released it and a quorum were silent; held when at least one
// released it and those with the silent ones make a quorum; else not held.
Standing count_release(int released, int silent, int quorum);

// A check: the lock is ours on the servers of `held_ms` (their PTTLs, -1
// without expiry) and not on `lost` of the `servers`. Held, with the time
// until fewer than `quorum` hold it, when a quorum hold it; not held when
// too many lost it for any quorum; else unknown.
struct CheckCount {
  Standing standing = Standing::unknown;
  std::int64_t remaining_ms = -2; // held: as quorum_remaining_ms()
};
CheckCount count_check(const std::vector<std::int64_t>& held_ms,
                       int lost,
                       int servers,
                       int quorum);

// The time until `quorum` servers no longer hold the lock, from the PTTLs
// (-1: no expiry) of the servers that hold it; -2 when fewer than `quorum`
// hold it now.
std::int64_t quorum_remaining_ms(std::vector<std::int64_t> held_ms, int quorum);

// True when a server that granted a lock while it ran as `granted_run_id`
// has restarted since, seeing it now run as `run_id` ("" when unknown: it
// refused INFO). A run_id unknown now but known then counts as a restart;
// one unknown then (no hold-back was asked for) cannot be told.
bool restarted_since(const std::string& granted_run_id,
                     const std::string& run_id);

// What one server that did not grant an acquire (or a peek's "free") said,
// as the quorum counts it: the parts of its answer that decide who speaks
// for the servers and when to look again.
struct BusyVote {
  // "user@host:pid", or who is ahead in the queue.
  std::string holder;
  // Why it held the request back (a restart within the grace, a start it
  // cannot tell), "" when it did not.
  std::string held_back;
  // 1-based place in the --fair queue, 0 outside it.
  std::int64_t place = 0;
  // Held under another limit (a semaphore or shared lock).
  bool limit_conflict = false;
  // Its lease (or hold-back) ends in this, -1 when not known.
  std::int64_t retry_ms = -1;
};

// True when an acquire that was not won lost a split vote: the servers that
// did not grant it name holders none of which can hold a quorum, even with
// every server that did not answer (`silent`), and none held it back for a
// restart or for a queue. Then nobody holds the lock and every contender is
// undoing its grants: look again soon rather than wait for their leases.
bool split_vote(const std::vector<BusyVote>& busy, int silent, int quorum);

// Returns which of `busy` speaks for them all: one that names the holder
// (and hold-back reason) most of them name, on a tie the one that got there
// first; nothing when `busy` is empty.
std::optional<std::size_t> spokesman(const std::vector<BusyVote>& busy);

// The time until `quorum` servers are free, from the PTTLs (-1: no expiry)
// of the servers that hold it and the count of `free` ones: 0 when `free`
// make a quorum, -1 when no wait frees enough.
std::int64_t
free_in_ms(std::vector<std::int64_t> held_ms, int free, int quorum);

// When to look again after an acquire that was not won, from what the
// `servers` said (`busy`: those that hold it): when enough of them are
// free for a quorum (free_in_ms()); 0 when enough are free now (then the
// caller backs off a little, at random, up to retry_spread_ms()).
std::int64_t
not_won_retry_ms(const std::vector<BusyVote>& busy, int servers, int quorum);

// How far apart contenders that found enough servers free look again:
// twice `per_server_ms`, at least 20 ms.
std::int64_t retry_spread_ms(std::int64_t per_server_ms);

// How many of `servers` must take a write (the winning fence, a slot's
// success) for every quorum to include one of them: servers - quorum + 1.
int meets_every_quorum(int servers, int quorum);

// How long after its `splits`-th split vote in a row a contender looks
// again at the latest: twice `per_server_ms`, at least 20 ms, doubled with
// each split, at most a second (a split that lasts is stale leases of
// contenders that could not undo them, which end by themselves).
std::int64_t split_backoff_span_ms(int splits, std::int64_t per_server_ms);

// How long a server that failed `failures` times in a row (it did not
// connect, or did not answer in time) is left out of the steps before it is
// dialled again: 100 ms, doubled each time, at most 2 s.
Duration down_for(int failures);

} // namespace rlock::lock::quorum

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

// True when an acquire that was not won lost a split vote: the servers that
// did not grant it name holders none of which can hold a quorum, even with
// every server that did not answer (`silent`), and none held it back for a
// restart or for a queue. Then nobody holds the lock and every contender is
// undoing its grants: look again soon rather than wait for their leases.
bool
split_vote(const std::vector<AcquireAttempt>& busy, int silent, int quorum);

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

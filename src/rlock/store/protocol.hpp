#pragma once

#include <rlock/lock/lease.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/store/keys.hpp>
#include <rlock/util/clock.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rlock::redis {
struct Script;
}

namespace rlock::lock {

// `duration` in whole milliseconds for a script's argument, rounded up and
// at least 1: a server-side lease longer than planned is safe, a shorter one
// is not.
std::string milliseconds_of(Duration duration);

// One call of a lock script, for a caller that sends it on several
// connections at once (QuorumStore): the script, its keys and arguments,
// and what failed, for messages.
struct ScriptCall {
  const redis::Script* script = nullptr;
  std::vector<std::string> keys;
  std::vector<std::string> args;
  std::string what;

  // The command that runs it by SHA1 (EVALSHA), or by source (`eval`).
  std::vector<std::string> command(bool eval = false) const;
};

// With a `limit`, one of that many permits of a semaphore, or a shared
// hold (k_shared_limit), nested in `parent_token`'s shared hold if given.
ScriptCall acquire_call(const LockKeys& keys,
                        const std::string& token,
                        Duration ttl,
                        const Holder& holder,
                        const WaiterEntry& entry = {},
                        std::int64_t limit = 0,
                        const std::string& parent_token = "");
ScriptCall renew_call(const LockKeys& keys,
                      const std::string& token,
                      Duration ttl,
                      RenewMode mode);
// With `wake` false, the release wakes no waiter (the undo of an acquire
// that was never held).
ScriptCall
release_call(const LockKeys& keys, const std::string& token, bool wake = true);
ScriptCall check_call(const LockKeys& keys, const std::string& token);
ScriptCall force_release_call(const LockKeys& keys);
ScriptCall peek_call(const LockKeys& keys);
ScriptCall leave_queue_call(const LockKeys& keys, const std::string& token);
ScriptCall slot_call(const LockKeys& keys, Duration length);
ScriptCall
mark_slot_call(const LockKeys& keys, std::int64_t number, Duration keep);
// Raises the server's fence counter for the lock to at least `fence` and,
// when `token` holds the lock, records `fence` as its fence.
ScriptCall raise_fence_call(const LockKeys& keys,
                            const std::string& token,
                            std::int64_t fence);

// Tries once to take the lock with `token` for `ttl`. A waiter that does
// not get it keeps its place as `entry` says: in the FIFO queue, or as a
// writer that holds new shared holders back. With a `limit`, takes one of
// that many permits of a semaphore, or a shared hold (k_shared_limit).
// Throws Error (unavailable) when Redis fails or answers with an error.
AcquireAttempt try_acquire(redis::Connection& connection,
                           const LockKeys& keys,
                           const std::string& token,
                           Duration ttl,
                           const Holder& holder,
                           const WaiterEntry& entry = {},
                           std::int64_t limit = 0,
                           const std::string& parent_token = "");

// Takes a waiter that gives up out of the queue, waking the next one if the
// lock is free. Throws Error (unavailable) when Redis fails.
void leave_queue(redis::Connection& connection,
                 const LockKeys& keys,
                 const std::string& token);

// Extends the lease to `ttl` from now (zero: the length it was taken with),
// as `mode` says. `held` is false when `token` no longer holds the lock.
// Throws Error (unavailable) when Redis fails.
Renewal renew(redis::Connection& connection,
              const LockKeys& keys,
              const std::string& token,
              Duration ttl,
              RenewMode mode = RenewMode::exact);

// Deletes the lock if `token` holds it and wakes the next waiter. Returns
// false when it did not hold it. Throws Error (unavailable) when Redis fails.
bool release(redis::Connection& connection,
             const LockKeys& keys,
             const std::string& token);

// Releases the lock if `token` holds it, on a connection of its own whose
// every step is bounded by a second; errors are ignored. For the moments when
// it is unknown whether we hold it (an acquire whose reply never came) or the
// lease is already given up: a stale lease must not block others for a TTL.
void release_quietly(const redis::Endpoint& endpoint,
                     const redis::ConnectOptions& options,
                     const LockKeys& keys,
                     const std::string& token);

// Returns the lock's PTTL in ms: -2 when it is free, -1 for a lease without
// expiry. One plain command, for a waiter that only needs to know whether to
// sleep on. Throws Error (unavailable).
std::int64_t lease_remaining_ms(redis::Connection& connection,
                                const LockKeys& keys);

// Returns the lease's time left when `token` holds the lock (Duration::max()
// for a lease without expiry), nothing when it does not. Throws Error
// (unavailable).
std::optional<Duration> check(redis::Connection& connection,
                              const LockKeys& keys,
                              const std::string& token);

// Deletes the lock whoever holds it and wakes the next waiter. Returns whose
// lock it was, nothing when it was free. Throws Error (unavailable).
std::optional<BrokenLock> force_release(redis::Connection& connection,
                                        const LockKeys& keys);

// Looks at the lock without taking it: free, or its holder and retry hint
// as try_acquire() would say them. Throws Error (unavailable).
PeekResult peek(redis::Connection& connection, const LockKeys& keys);

// Returns the current --once-per slot of `length`. Throws Error (unavailable).
Slot current_slot(redis::Connection& connection,
                  const LockKeys& keys,
                  Duration length);

// Records that the run for slot `number` succeeded, for `keep`. Throws Error
// (unavailable).
void mark_slot_done(redis::Connection& connection,
                    const LockKeys& keys,
                    std::int64_t number,
                    Duration keep);

} // namespace rlock::lock

#pragma once

#include <rlock/lock/lease.hpp>
#include <rlock/redis/reply.hpp>
#include <rlock/store/keys.hpp>
#include <rlock/util/duration.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// What the lock scripts' replies (src/rlock/redis/scripts/*.lua) and the
// status reads mean: pure functions, no I/O. `what` starts the message of
// every error, as in "cannot acquire lock 'x': unexpected reply". Each throws
// as redis::throw_if_error() does for an error reply, and Error
// (unavailable) for a reply of another shape than the script's.
namespace rlock::lock {

// acquire.lua's reply: {1, fence} ({1, fence, slot} for a semaphore), {2,
// limit} for a lock held under another limit, or a busy reply (as
// decode_peek() reads it). A grant's `sent` is left for the caller.
AcquireAttempt decode_acquire(const redis::Reply& reply,
                              const std::string& what);

// peek.lua's reply: {1} when the lock is free, else the busy reply both
// scripts share, {0, retry_ms, "user@host:pid", command, place,
// holder_ttl_ms, held_ms}.
PeekResult decode_peek(const redis::Reply& reply, const std::string& what);

// renew.lua's reply: {held, lease PTTL before the renewal}.
Renewal decode_renew(const redis::Reply& reply, const std::string& what);

// The 1 or 0 of release.lua, leave.lua and mark_slot.lua: true for 1.
bool decode_yes_no(const redis::Reply& reply, const std::string& what);

// A PTTL reply: the lease's ms left, -2 when free, -1 without expiry.
std::int64_t decode_pttl(const redis::Reply& reply, const std::string& what);

// check.lua's reply, a PTTL: the lease's time left (Duration::max() without
// expiry); nothing when the token does not hold the lock (-2).
std::optional<Duration> decode_check(const redis::Reply& reply,
                                     const std::string& what);

// force_release.lua's reply: {holder, command, token} of the lock it broke;
// nothing when the lock was free (any other shape).
std::optional<BrokenLock> decode_force_release(const redis::Reply& reply,
                                               const std::string& what);

// slot.lua's reply: {number, done, ms until the next slot}.
Slot decode_slot(const redis::Reply& reply, const std::string& what);

// TIME's reply ({seconds, microseconds}) in ms since the epoch.
std::int64_t decode_server_time(const redis::Reply& reply);

// Fills `state` (its key set) from the lock's HGETALL and PTTL replies and
// its holders' ZRANGE WITHSCORES (a semaphore's; empty for a plain lock),
// read at the server's `now_ms`: `held` is false when the key does not exist
// or is empty, or no holder of a semaphore has a lease left.
void decode_lock_state(LockState& state,
                       const redis::Reply& hash,
                       const redis::Reply& pttl,
                       const redis::Reply& holders = {},
                       std::int64_t now_ms = 0);

// The ZCOUNT of the live waiters in the queue of the lock at `key`.
std::int64_t decode_waiters(const redis::Reply& reply, const std::string& key);

// One SCAN reply: the next cursor ("0" at the end) and the NAMEs of the lock
// keys found in `space` (other keys left out).
struct ScanPage {
  std::string cursor;
  std::vector<std::string> names;
};
ScanPage decode_scan(const redis::Reply& reply, const KeySpace& space);

} // namespace rlock::lock

#pragma once

#include <rlock/lock/lease.hpp>
#include <rlock/redis/reply.hpp>
#include <rlock/store/protocol.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rlock::lock {

// How a lock is kept on one server, as a store that sends each step to
// several servers at once (QuorumStore) needs it: the script call of each
// step and what its reply means. rlock's own layout (RlockLayout) and the
// SET-NX family's (StringLayout, --compat string) are two; the store's
// safety rules (quorum, validity, undo, fences) do not depend on which.
// The decoders are pure and throw as replies.hpp's do: redis::Failure for
// an error reply or a reply of another shape.
class LockLayout {
public:
  virtual ~LockLayout() = default;

  // The key the lock is kept at, for messages and status.
  virtual std::string key_of(std::string_view name) const = 0;
  // A lock of this layout sends no wake-up when the application releases
  // it: a waiter polls (Busy::polled).
  virtual bool polled() const = 0;

  virtual ScriptCall acquire_call(const LockRequest& request,
                                  const WaiterEntry& entry) const = 0;
  virtual AcquireAttempt decode_acquire(const redis::Reply& reply,
                                        const std::string& what) const = 0;
  // Throws Error (bad_input) when the layout cannot renew with `ttl`.
  virtual ScriptCall renew_call(std::string_view name,
                                const std::string& token,
                                Duration ttl,
                                RenewMode mode) const = 0;
  virtual Renewal decode_renew(const redis::Reply& reply,
                               const std::string& what) const = 0;
  // With `wake` false, the release wakes no waiter (an undo).
  virtual ScriptCall release_call(std::string_view name,
                                  const std::string& token,
                                  bool wake) const = 0;
  // True when the release deleted the lock.
  virtual bool decode_release(const redis::Reply& reply,
                              const std::string& what) const = 0;
  virtual ScriptCall check_call(std::string_view name,
                                const std::string& token) const = 0;
  // The lease's time left when `token` holds the lock, as check() says it.
  virtual std::optional<Duration>
  decode_check(const redis::Reply& reply,
               const std::string& token,
               const std::string& what) const = 0;
  virtual ScriptCall peek_call(std::string_view name) const = 0;
  virtual PeekResult decode_peek(const redis::Reply& reply,
                                 const std::string& what) const = 0;
  virtual ScriptCall force_release_call(std::string_view name) const = 0;
  virtual std::optional<BrokenLock>
  decode_force_release(const redis::Reply& reply,
                       const std::string& what) const = 0;
  // Raises the server's fence counter for the lock to at least `fence`.
  virtual ScriptCall raise_fence_call(std::string_view name,
                                      const std::string& token,
                                      std::int64_t fence) const = 0;
  // A waiter's leaving the queue; nothing for a layout with no queue.
  virtual std::optional<ScriptCall>
  leave_queue_call(std::string_view name, const std::string& token) const = 0;
  // --once-per's calls; throw Error (bad_input) for a layout that keeps no
  // record of runs.
  virtual ScriptCall slot_call(std::string_view name,
                               Duration length) const = 0;
  virtual ScriptCall mark_slot_call(std::string_view name,
                                    std::int64_t number,
                                    Duration keep) const = 0;
};

// rlock's own layout (protocol.hpp, replies.hpp) under `prefix`.
std::unique_ptr<LockLayout> rlock_layout(std::string prefix);

} // namespace rlock::lock

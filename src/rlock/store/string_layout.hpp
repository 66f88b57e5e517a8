#pragma once

#include <rlock/store/lock_layout.hpp>
#include <rlock/store/string_keys.hpp>

#include <optional>
#include <string>

namespace rlock::lock {

// What the --compat string scripts' replies (string_*.lua) mean: pure
// functions, no I/O, each throwing redis::Failure (unexpected_reply) for a
// reply of another shape, and for a key of another type than a string,
// which is never taken or shared (its message starts with `what`).

// string_acquire.lua's reply: {'granted', fence}, {'busy', value, pttl} or
// {'wrongtype', type}. A grant's `sent` is left for the caller.
AcquireAttempt decode_string_acquire(const redis::Reply& reply,
                                     const std::string& what);

// string_look.lua's reply: {'none'} when free, {'string', value, pttl} when
// held, {type, false, pttl} for a key of another type.
PeekResult decode_string_peek(const redis::Reply& reply,
                              const std::string& what);

// string_look.lua's reply for check(): the lease's time left when the key
// holds `token` (Duration::max() without expiry), nothing when it does not.
std::optional<Duration> decode_string_check(const redis::Reply& reply,
                                            const std::string& token,
                                            const std::string& what);

// string_renew.lua's reply: the PTTL before the renewal, -2 when the key
// no longer holds the token.
Renewal decode_string_renew(const redis::Reply& reply, const std::string& what);

// string_look.lua's reply to 'break': the value it deleted, nothing when
// the key was free.
std::optional<BrokenLock> decode_string_force_release(const redis::Reply& reply,
                                                      const std::string& what);

// The SET-NX family's layout (--compat string) for a store over several
// servers: the application's key NAME holds the holder's token, with
// rlock's wake-up list and fence counter beside it (string_keys_for()).
// It keeps no queue and no record of runs.
class StringLayout final : public LockLayout {
public:
  StringLayout(Compat compat, std::string prefix);

  std::string key_of(std::string_view name) const override;
  bool polled() const override;
  ScriptCall acquire_call(const LockRequest& request,
                          const WaiterEntry& entry) const override;
  AcquireAttempt decode_acquire(const redis::Reply& reply,
                                const std::string& what) const override;
  ScriptCall renew_call(std::string_view name,
                        const std::string& token,
                        Duration ttl,
                        RenewMode mode) const override;
  Renewal decode_renew(const redis::Reply& reply,
                       const std::string& what) const override;
  ScriptCall release_call(std::string_view name,
                          const std::string& token,
                          bool wake) const override;
  bool decode_release(const redis::Reply& reply,
                      const std::string& what) const override;
  ScriptCall check_call(std::string_view name,
                        const std::string& token) const override;
  std::optional<Duration> decode_check(const redis::Reply& reply,
                                       const std::string& token,
                                       const std::string& what) const override;
  ScriptCall peek_call(std::string_view name) const override;
  PeekResult decode_peek(const redis::Reply& reply,
                         const std::string& what) const override;
  ScriptCall force_release_call(std::string_view name) const override;
  std::optional<BrokenLock>
  decode_force_release(const redis::Reply& reply,
                       const std::string& what) const override;
  ScriptCall raise_fence_call(std::string_view name,
                              const std::string& token,
                              std::int64_t fence) const override;
  std::optional<ScriptCall>
  leave_queue_call(std::string_view name,
                   const std::string& token) const override;
  ScriptCall slot_call(std::string_view name, Duration length) const override;
  ScriptCall mark_slot_call(std::string_view name,
                            std::int64_t number,
                            Duration keep) const override;

private:
  StringKeys keys(std::string_view name) const;

  Compat m_compat;
  std::string m_prefix;
};

} // namespace rlock::lock

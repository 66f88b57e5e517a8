#include <rlock/redis/script.hpp>
#include <rlock/store/protocol.hpp>
#include <rlock/store/replies.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>

namespace rlock::lock {

namespace {

redis::Reply
run(redis::Connection& connection, const ScriptCall& call) {
  return redis::run_script(connection, *call.script, call.keys, call.args);
}

} // namespace

std::string
milliseconds_of(Duration duration) {
  // Rounded up: a server-side lease longer than planned is safe, a shorter one
  // is not.
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(duration);
  return std::to_string(std::max<std::int64_t>(ms.count(), 1));
}

std::vector<std::string>
ScriptCall::command(bool eval) const {
  return redis::script_command(*script, eval ? "EVAL" : "EVALSHA", keys, args);
}

ScriptCall
acquire_call(const LockKeys& keys,
             const std::string& token,
             Duration ttl,
             const Holder& holder,
             const WaiterEntry& entry,
             std::int64_t limit,
             const std::string& parent_token) {
  const auto ms_or_zero = [](Duration duration) {
    return duration > Duration::zero() ? milliseconds_of(duration) : "0";
  };
  return {&redis::k_acquire_script,
          keys.script_keys(),
          {token,
           milliseconds_of(ttl),
           holder.host,
           std::to_string(holder.pid),
           holder.user,
           holder.command,
           ms_or_zero(entry.queue_ttl),
           std::to_string(limit),
           ms_or_zero(entry.place_ttl),
           parent_token,
           entry.waited ? "1" : "0"},
          "cannot acquire lock " + quote(keys.name)};
}

ScriptCall
renew_call(const LockKeys& keys,
           const std::string& token,
           Duration ttl,
           RenewMode mode) {
  // Zero keeps the length the lock was taken with.
  return {&redis::k_renew_script,
          keys.script_keys(),
          {token,
           ttl == Duration::zero() ? "0" : milliseconds_of(ttl),
           mode == RenewMode::exact ? "exact" : "at_least"},
          "cannot renew lock " + quote(keys.name)};
}

ScriptCall
release_call(const LockKeys& keys, const std::string& token, bool wake) {
  return {&redis::k_release_script,
          keys.script_keys(),
          {token, wake ? "wake" : "quiet"},
          "cannot release lock " + quote(keys.name)};
}

ScriptCall
check_call(const LockKeys& keys, const std::string& token) {
  return {&redis::k_check_script,
          keys.script_keys(),
          {token},
          "cannot check lock " + quote(keys.name)};
}

ScriptCall
force_release_call(const LockKeys& keys) {
  return {&redis::k_force_release_script,
          keys.script_keys(),
          {},
          "cannot break lock " + quote(keys.name)};
}

ScriptCall
peek_call(const LockKeys& keys) {
  return {&redis::k_peek_script,
          keys.script_keys(),
          {},
          "cannot read lock " + quote(keys.name)};
}

ScriptCall
leave_queue_call(const LockKeys& keys, const std::string& token) {
  return {&redis::k_leave_script,
          keys.script_keys(),
          {token},
          "cannot leave the queue of " + quote(keys.name)};
}

ScriptCall
slot_call(const LockKeys& keys, Duration length) {
  return {&redis::k_slot_script,
          keys.script_keys(),
          {milliseconds_of(length)},
          "cannot read the current slot of " + quote(keys.name)};
}

ScriptCall
mark_slot_call(const LockKeys& keys, std::int64_t number, Duration keep) {
  return {&redis::k_mark_slot_script,
          keys.script_keys(),
          {std::to_string(number), milliseconds_of(keep)},
          "cannot record the current slot of " + quote(keys.name)};
}

ScriptCall
raise_fence_call(const LockKeys& keys,
                 const std::string& token,
                 std::int64_t fence) {
  return {&redis::k_raise_fence_script,
          keys.script_keys(),
          {token, std::to_string(fence)},
          "cannot raise the fence of " + quote(keys.name)};
}

AcquireAttempt
try_acquire(redis::Connection& connection,
            const LockKeys& keys,
            const std::string& token,
            Duration ttl,
            const Holder& holder,
            const WaiterEntry& entry,
            std::int64_t limit,
            const std::string& parent_token) {
  const BootTime sent = boot_now();
  const auto call =
      acquire_call(keys, token, ttl, holder, entry, limit, parent_token);
  auto attempt = decode_acquire(run(connection, call), call.what);
  if (auto* granted = std::get_if<Granted>(&attempt)) {
    granted->sent = sent;
  }
  return attempt;
}

void
leave_queue(redis::Connection& connection,
            const LockKeys& keys,
            const std::string& token) {
  const auto call = leave_queue_call(keys, token);
  decode_yes_no(run(connection, call), call.what);
}

Renewal
renew(redis::Connection& connection,
      const LockKeys& keys,
      const std::string& token,
      Duration ttl,
      RenewMode mode) {
  const auto call = renew_call(keys, token, ttl, mode);
  return decode_renew(run(connection, call), call.what);
}

bool
release(redis::Connection& connection,
        const LockKeys& keys,
        const std::string& token) {
  const auto call = release_call(keys, token);
  return decode_yes_no(run(connection, call), call.what);
}

void
release_quietly(const redis::Endpoint& endpoint,
                const redis::ConnectOptions& options,
                const LockKeys& keys,
                const std::string& token) {
  const Duration bound = std::chrono::seconds(1);
  redis::ConnectOptions bounded = options;
  bounded.connect_timeout = std::min(options.connect_timeout, bound);
  bounded.io_timeout = std::min(options.io_timeout, bound);
  try {
    auto connection = redis::Connection::open(endpoint, bounded);
    release(connection, keys, token);
  } catch (const Error&) {
    // The lease expires by itself.
  }
}

std::int64_t
lease_remaining_ms(redis::Connection& connection, const LockKeys& keys) {
  return decode_pttl(connection.command({"PTTL", keys.lock}),
                     "cannot read lock " + quote(keys.name));
}

std::optional<Duration>
check(redis::Connection& connection,
      const LockKeys& keys,
      const std::string& token) {
  const auto call = check_call(keys, token);
  return decode_check(run(connection, call), call.what);
}

std::optional<BrokenLock>
force_release(redis::Connection& connection, const LockKeys& keys) {
  const auto call = force_release_call(keys);
  return decode_force_release(run(connection, call), call.what);
}

PeekResult
peek(redis::Connection& connection, const LockKeys& keys) {
  const auto call = peek_call(keys);
  return decode_peek(run(connection, call), call.what);
}

Slot
current_slot(redis::Connection& connection,
             const LockKeys& keys,
             Duration length) {
  const auto call = slot_call(keys, length);
  return decode_slot(run(connection, call), call.what);
}

void
mark_slot_done(redis::Connection& connection,
               const LockKeys& keys,
               std::int64_t number,
               Duration keep) {
  const auto call = mark_slot_call(keys, number, keep);
  decode_yes_no(run(connection, call), call.what);
}

} // namespace rlock::lock

#include <rlock/lock/protocol.hpp>
#include <rlock/lock/replies.hpp>
#include <rlock/redis/script.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>

namespace rlock::lock {

namespace {

std::string
milliseconds_of(Duration duration) {
  // Rounded up: a server-side lease longer than planned is safe, a shorter one
  // is not.
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(duration);
  return std::to_string(std::max<std::int64_t>(ms.count(), 1));
}

// Runs a script that answers 0 or 1, and returns that answer.
bool
run_yes_no(redis::Connection& connection,
           const redis::Script& script,
           const std::vector<std::string>& keys,
           const std::vector<std::string>& args,
           const std::string& what) {
  return decode_yes_no(redis::run_script(connection, script, keys, args), what);
}

} // namespace

AcquireAttempt
try_acquire(redis::Connection& connection,
            const LockKeys& keys,
            const std::string& token,
            Duration ttl,
            const Holder& holder,
            Duration queue_ttl) {
  const BootTime sent = boot_now();
  const auto reply = redis::run_script(
      connection,
      redis::k_acquire_script,
      keys.script_keys(),
      {token,
       milliseconds_of(ttl),
       holder.host,
       std::to_string(holder.pid),
       holder.user,
       holder.command,
       queue_ttl > Duration::zero() ? milliseconds_of(queue_ttl) : "0"});
  auto attempt =
      decode_acquire(reply, "cannot acquire lock " + quote(keys.name));
  attempt.sent = sent;
  return attempt;
}

void
leave_queue(redis::Connection& connection,
            const LockKeys& keys,
            const std::string& token) {
  run_yes_no(connection,
             redis::k_leave_script,
             keys.script_keys(),
             {token, keys.channel_prefix},
             "cannot leave the queue of " + quote(keys.name));
}

Renewal
renew(redis::Connection& connection,
      const LockKeys& keys,
      const std::string& token,
      Duration ttl,
      RenewMode mode) {
  // Zero keeps the length the lock was taken with.
  const auto reply =
      redis::run_script(connection,
                        redis::k_renew_script,
                        {keys.lock},
                        {token,
                         ttl == Duration::zero() ? "0" : milliseconds_of(ttl),
                         mode == RenewMode::exact ? "exact" : "at_least"});
  return decode_renew(reply, "cannot renew lock " + quote(keys.name));
}

bool
release(redis::Connection& connection,
        const LockKeys& keys,
        const std::string& token) {
  return run_yes_no(connection,
                    redis::k_release_script,
                    keys.script_keys(),
                    {token, keys.channel_prefix},
                    "cannot release lock " + quote(keys.name));
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
  const auto reply = redis::run_script(
      connection, redis::k_check_script, {keys.lock}, {token});
  return decode_check(reply, "cannot check lock " + quote(keys.name));
}

std::optional<BrokenLock>
force_release(redis::Connection& connection, const LockKeys& keys) {
  const auto reply = redis::run_script(connection,
                                       redis::k_force_release_script,
                                       keys.script_keys(),
                                       {keys.channel_prefix});
  return decode_force_release(reply, "cannot break lock " + quote(keys.name));
}

AcquireAttempt
peek(redis::Connection& connection, const LockKeys& keys) {
  const BootTime sent = boot_now();
  const auto reply = redis::run_script(
      connection, redis::k_peek_script, keys.script_keys(), {});
  auto attempt = decode_peek(reply, "cannot read lock " + quote(keys.name));
  attempt.sent = sent;
  return attempt;
}

Slot
current_slot(redis::Connection& connection,
             const LockKeys& keys,
             Duration length) {
  const auto reply = redis::run_script(connection,
                                       redis::k_slot_script,
                                       keys.script_keys(),
                                       {milliseconds_of(length)});
  return decode_slot(reply,
                     "cannot read the current slot of " + quote(keys.name));
}

void
mark_slot_done(redis::Connection& connection,
               const LockKeys& keys,
               std::int64_t number,
               Duration keep) {
  run_yes_no(connection,
             redis::k_mark_slot_script,
             keys.script_keys(),
             {std::to_string(number), milliseconds_of(keep)},
             "cannot record the current slot of " + quote(keys.name));
}

} // namespace rlock::lock

#include <rlock/lock/protocol.hpp>
#include <rlock/redis/script.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/exit_codes.hpp>
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
  const auto reply = redis::run_script(connection, script, keys, args);
  redis::throw_if_error(reply, what);
  return redis::integer_of(reply.get(), what) == 1;
}

void
read_busy_reply(const redisReply* reply,
                AcquireAttempt& attempt,
                const std::string& what) {
  attempt.retry_ms = redis::integer_of(reply->element[1], what);
  if (reply->elements >= 6) {
    attempt.holder = redis::string_of(reply->element[2], what);
    attempt.command = redis::string_of(reply->element[3], what);
    attempt.place = redis::integer_of(reply->element[4], what);
    attempt.holder_ttl_ms = redis::integer_of(reply->element[5], what);
  }
  if (reply->elements >= 7) {
    attempt.held_ms = redis::integer_of(reply->element[6], what);
  }
}

} // namespace

AcquireAttempt
try_acquire(redis::Connection& connection,
            const LockKeys& keys,
            const std::string& token,
            Duration ttl,
            const Holder& holder,
            Duration queue_ttl) {
  const std::string what = "cannot acquire lock " + quote(keys.name);
  AcquireAttempt attempt;
  attempt.sent = boot_now();
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
  redis::throw_if_error(reply, what);
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2) {
    throw Error(exit_code::k_unavailable, what + ": unexpected reply");
  }
  attempt.acquired = redis::integer_of(reply->element[0], what) == 1;
  if (attempt.acquired) {
    attempt.fence = redis::integer_of(reply->element[1], what);
  } else {
    read_busy_reply(reply.get(), attempt, what);
  }
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
  const std::string what = "cannot renew lock " + quote(keys.name);
  // Zero keeps the length the lock was taken with.
  const auto reply =
      redis::run_script(connection,
                        redis::k_renew_script,
                        {keys.lock},
                        {token,
                         ttl == Duration::zero() ? "0" : milliseconds_of(ttl),
                         mode == RenewMode::exact ? "exact" : "at_least"});
  redis::throw_if_error(reply, what);
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
    throw Error(exit_code::k_unavailable, what + ": unexpected reply");
  }
  Renewal renewal;
  renewal.held = redis::integer_of(reply->element[0], what) == 1;
  renewal.remaining_before_ms = redis::integer_of(reply->element[1], what);
  return renewal;
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
  const auto reply = connection.command({"PTTL", keys.lock});
  const std::string what = "cannot read lock " + quote(keys.name);
  redis::throw_if_error(reply, what);
  return redis::integer_of(reply.get(), what);
}

std::optional<Duration>
check(redis::Connection& connection,
      const LockKeys& keys,
      const std::string& token) {
  const std::string what = "cannot check lock " + quote(keys.name);
  const auto reply = redis::run_script(
      connection, redis::k_check_script, {keys.lock}, {token});
  redis::throw_if_error(reply, what);
  const auto pttl = redis::integer_of(reply.get(), what);
  if (pttl == -2) {
    return std::nullopt;
  }
  return pttl < 0 ? Duration::max() : from_milliseconds(pttl);
}

std::optional<BrokenLock>
force_release(redis::Connection& connection, const LockKeys& keys) {
  const std::string what = "cannot break lock " + quote(keys.name);
  const auto reply = redis::run_script(connection,
                                       redis::k_force_release_script,
                                       keys.script_keys(),
                                       {keys.channel_prefix});
  redis::throw_if_error(reply, what);
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3) {
    return std::nullopt;
  }
  return BrokenLock{redis::string_of(reply->element[0], what),
                    redis::string_of(reply->element[1], what),
                    redis::string_of(reply->element[2], what)};
}

AcquireAttempt
peek(redis::Connection& connection, const LockKeys& keys) {
  const std::string what = "cannot read lock " + quote(keys.name);
  AcquireAttempt attempt;
  attempt.sent = boot_now();
  const auto reply = redis::run_script(
      connection, redis::k_peek_script, keys.script_keys(), {});
  redis::throw_if_error(reply, what);
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1) {
    throw Error(exit_code::k_unavailable, what + ": unexpected reply");
  }
  attempt.acquired = redis::integer_of(reply->element[0], what) == 1;
  if (!attempt.acquired && reply->elements >= 6) {
    attempt.retry_ms = redis::integer_of(reply->element[1], what);
    attempt.holder = redis::string_of(reply->element[2], what);
    attempt.command = redis::string_of(reply->element[3], what);
    attempt.held_ms = redis::integer_of(reply->element[4], what);
    attempt.holder_ttl_ms = redis::integer_of(reply->element[5], what);
  }
  return attempt;
}

Slot
current_slot(redis::Connection& connection,
             const LockKeys& keys,
             Duration length) {
  const std::string what =
      "cannot read the --once-per slot of " + quote(keys.name);
  const auto reply = redis::run_script(connection,
                                       redis::k_slot_script,
                                       keys.script_keys(),
                                       {milliseconds_of(length)});
  redis::throw_if_error(reply, what);
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
    throw Error(exit_code::k_unavailable, what + ": unexpected reply");
  }
  return Slot{redis::integer_of(reply->element[0], what),
              redis::integer_of(reply->element[1], what) == 1,
              from_milliseconds(redis::integer_of(reply->element[2], what))};
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
             "cannot record the --once-per slot of " + quote(keys.name));
}

} // namespace rlock::lock

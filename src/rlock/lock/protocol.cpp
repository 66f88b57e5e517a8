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

bool
renew(redis::Connection& connection,
      const LockKeys& keys,
      const std::string& token,
      Duration ttl) {
  return run_yes_no(connection,
                    redis::k_renew_script,
                    {keys.lock},
                    {token, milliseconds_of(ttl)},
                    "cannot renew lock " + quote(keys.name));
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

} // namespace rlock::lock

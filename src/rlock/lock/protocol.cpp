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

// Runs a compare-token script and returns its 0/1 answer.
bool
run_owned(redis::Connection& connection,
          const redis::Script& script,
          const LockKeys& keys,
          const std::vector<std::string>& args) {
  const std::string what = script.name == "renew"
                               ? "cannot renew lock " + quote(keys.name)
                               : "cannot release lock " + quote(keys.name);
  const auto reply = redis::run_script(connection, script, {keys.lock}, args);
  redis::throw_if_error(reply, what);
  return redis::integer_of(reply.get(), what) == 1;
}

} // namespace

AcquireAttempt
try_acquire(redis::Connection& connection,
            const LockKeys& keys,
            const std::string& token,
            Duration ttl,
            const Holder& holder) {
  const std::string what = "cannot acquire lock " + quote(keys.name);
  AcquireAttempt attempt;
  attempt.sent = boot_now();
  const auto reply = redis::run_script(connection,
                                       redis::k_acquire_script,
                                       {keys.lock, keys.fence},
                                       {token,
                                        milliseconds_of(ttl),
                                        holder.host,
                                        std::to_string(holder.pid),
                                        holder.user,
                                        holder.command});
  redis::throw_if_error(reply, what);
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2) {
    throw Error(exit_code::k_unavailable, what + ": unexpected reply");
  }
  attempt.acquired = redis::integer_of(reply->element[0], what) == 1;
  if (attempt.acquired) {
    attempt.fence = redis::integer_of(reply->element[1], what);
    return attempt;
  }
  attempt.pttl_ms = redis::integer_of(reply->element[1], what);
  if (reply->elements >= 4) {
    attempt.holder = redis::string_of(reply->element[2], what);
    attempt.command = redis::string_of(reply->element[3], what);
  }
  return attempt;
}

bool
renew(redis::Connection& connection,
      const LockKeys& keys,
      const std::string& token,
      Duration ttl) {
  return run_owned(
      connection, redis::k_renew_script, keys, {token, milliseconds_of(ttl)});
}

bool
release(redis::Connection& connection,
        const LockKeys& keys,
        const std::string& token) {
  return run_owned(connection, redis::k_release_script, keys, {token});
}

} // namespace rlock::lock

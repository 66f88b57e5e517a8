// --compat string on several servers: the string scripts' calls and what
// their replies mean (docs/sharing.md, "A quorum").

#include <rlock/redis/failure.hpp>
#include <rlock/redis/scripts.hpp>
#include <rlock/store/string_layout.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>

namespace rlock::lock {

namespace {

[[noreturn]] void
throw_unexpected(const std::string& what) {
  throw redis::Failure(redis::FailureKind::unexpected_reply,
                       what + ": unexpected reply from the script");
}

// The reply's element `i`, which must be a string.
const std::string&
text_at(const redis::Reply& reply, std::size_t i, const std::string& what) {
  if (!reply.is_array() || i >= reply.elements.size()
      || !reply.elements[i].is_string()) {
    throw_unexpected(what);
  }
  return reply.elements[i].text;
}

// The reply's element `i`, which must be an integer.
std::int64_t
integer_at(const redis::Reply& reply, std::size_t i, const std::string& what) {
  if (!reply.is_array() || i >= reply.elements.size()
      || reply.elements[i].type != redis::Reply::Type::integer) {
    throw_unexpected(what);
  }
  return reply.elements[i].integer;
}

// Throws Failure (unexpected_reply): the key holds something that is not a
// lock of this style, which is never taken or shared.
[[noreturn]] void
throw_wrong_type(const std::string& type, const std::string& what) {
  throw redis::Failure(redis::FailureKind::unexpected_reply,
                       what + ": the key holds a " + type
                           + ", not a string as this style keeps its lock: "
                             "it is neither taken nor shared");
}

// A held key's {value, pttl} as a waiter reads it: the library sends no
// wake-up, so the waiter looks again soon.
Busy
busy_of(const redis::Reply& reply, const std::string& what) {
  Busy busy;
  busy.holder = text_at(reply, 1, what);
  busy.retry_ms = integer_at(reply, 2, what);
  busy.holders = 1;
  busy.polled = true;
  return busy;
}

// True when `value` is `token`'s (as the scripts' holds() says).
bool
holds(const std::string& value, const std::string& token) {
  return value == token || (!token.empty() && value.ends_with(":" + token));
}

} // namespace

AcquireAttempt
decode_string_acquire(const redis::Reply& reply, const std::string& what) {
  redis::throw_if_error(reply, what);
  const auto& verdict = text_at(reply, 0, what);
  if (verdict == "granted") {
    Granted granted;
    granted.fence = integer_at(reply, 1, what);
    return granted;
  }
  if (verdict == "busy") {
    return busy_of(reply, what);
  }
  if (verdict == "wrongtype") {
    throw_wrong_type(text_at(reply, 1, what), what);
  }
  throw_unexpected(what);
}

PeekResult
decode_string_peek(const redis::Reply& reply, const std::string& what) {
  redis::throw_if_error(reply, what);
  const auto& type = text_at(reply, 0, what);
  if (type == "none") {
    return Free{};
  }
  if (type != "string") {
    throw_wrong_type(type, what);
  }
  return busy_of(reply, what);
}

std::optional<Duration>
decode_string_check(const redis::Reply& reply,
                    const std::string& token,
                    const std::string& what) {
  redis::throw_if_error(reply, what);
  if (text_at(reply, 0, what) != "string") {
    return std::nullopt;
  }
  if (!holds(text_at(reply, 1, what), token)) {
    return std::nullopt;
  }
  const auto pttl = integer_at(reply, 2, what);
  return pttl < 0 ? Duration::max() : from_milliseconds(pttl);
}

Renewal
decode_string_renew(const redis::Reply& reply, const std::string& what) {
  const auto before = redis::integer_of(reply, what);
  if (before < -2) {
    throw_unexpected(what);
  }
  Renewal renewal;
  renewal.held = before != -2;
  renewal.remaining_before_ms = before;
  return renewal;
}

std::optional<BrokenLock>
decode_string_force_release(const redis::Reply& reply,
                            const std::string& what) {
  redis::throw_if_error(reply, what);
  const auto& type = text_at(reply, 0, what);
  if (type == "none") {
    return std::nullopt;
  }
  if (type != "string") {
    throw_wrong_type(type, what);
  }
  (void)integer_at(reply, 2, what); // the shape of a look, checked whole
  BrokenLock broken;
  broken.token = text_at(reply, 1, what);
  broken.holder = broken.token;
  return broken;
}

StringLayout::StringLayout(Compat compat, std::string prefix)
    : m_compat(std::move(compat)), m_prefix(std::move(prefix)) {
}

StringKeys
StringLayout::keys(std::string_view name) const {
  return string_keys_for(m_compat, m_prefix, name);
}

std::string
StringLayout::key_of(std::string_view name) const {
  return keys(name).lock;
}

bool
StringLayout::polled() const {
  return true;
}

ScriptCall
StringLayout::acquire_call(const LockRequest& request,
                           const WaiterEntry&) const {
  const auto k = keys(request.name);
  return {&redis::k_string_acquire_script,
          {k.lock, k.fence},
          {request.token, milliseconds_of(request.ttl)},
          "cannot acquire lock " + quote(request.name)};
}

AcquireAttempt
StringLayout::decode_acquire(const redis::Reply& reply,
                             const std::string& what) const {
  return decode_string_acquire(reply, what);
}

ScriptCall
StringLayout::renew_call(std::string_view name,
                         const std::string& token,
                         Duration ttl,
                         RenewMode mode) const {
  if (ttl == Duration::zero()) {
    throw Error(ErrorKind::bad_input,
                "a lock kept as a plain string records no lease length: "
                "the new length must be given");
  }
  return {&redis::k_string_renew_script,
          {keys(name).lock},
          {token,
           milliseconds_of(ttl),
           mode == RenewMode::exact ? "exact" : "at_least"},
          "cannot renew lock " + quote(name)};
}

Renewal
StringLayout::decode_renew(const redis::Reply& reply,
                           const std::string& what) const {
  return decode_string_renew(reply, what);
}

ScriptCall
StringLayout::release_call(std::string_view name,
                           const std::string& token,
                           bool wake) const {
  const auto k = keys(name);
  return {&redis::k_string_release_script,
          {k.lock, k.wake},
          {token, wake ? "wake" : "quiet", k.wake + ":released"},
          "cannot release lock " + quote(name)};
}

bool
StringLayout::decode_release(const redis::Reply& reply,
                             const std::string& what) const {
  const auto released = redis::integer_of(reply, what);
  if (released != 0 && released != 1) {
    throw_unexpected(what);
  }
  return released == 1;
}

ScriptCall
StringLayout::check_call(std::string_view name, const std::string&) const {
  const auto k = keys(name);
  return {&redis::k_string_look_script,
          {k.lock, k.wake},
          {"look", ""},
          "cannot check lock " + quote(name)};
}

std::optional<Duration>
StringLayout::decode_check(const redis::Reply& reply,
                           const std::string& token,
                           const std::string& what) const {
  return decode_string_check(reply, token, what);
}

ScriptCall
StringLayout::peek_call(std::string_view name) const {
  const auto k = keys(name);
  return {&redis::k_string_look_script,
          {k.lock, k.wake},
          {"look", ""},
          "cannot read lock " + quote(name)};
}

PeekResult
StringLayout::decode_peek(const redis::Reply& reply,
                          const std::string& what) const {
  return decode_string_peek(reply, what);
}

ScriptCall
StringLayout::force_release_call(std::string_view name) const {
  const auto k = keys(name);
  return {&redis::k_string_look_script,
          {k.lock, k.wake},
          {"break", k.wake + ":released"},
          "cannot break lock " + quote(name)};
}

std::optional<BrokenLock>
StringLayout::decode_force_release(const redis::Reply& reply,
                                   const std::string& what) const {
  return decode_string_force_release(reply, what);
}

ScriptCall
StringLayout::raise_fence_call(std::string_view name,
                               const std::string&,
                               std::int64_t fence) const {
  return {&redis::k_string_raise_fence_script,
          {keys(name).fence},
          {std::to_string(fence)},
          "cannot raise the fence of " + quote(name)};
}

std::optional<ScriptCall>
StringLayout::leave_queue_call(std::string_view, const std::string&) const {
  // No queue: a waiter that gives up leaves nothing behind.
  return std::nullopt;
}

ScriptCall
StringLayout::slot_call(std::string_view, Duration) const {
  throw Error(ErrorKind::bad_input,
              "a lock kept as a plain string keeps no record of runs");
}

ScriptCall
StringLayout::mark_slot_call(std::string_view, std::int64_t, Duration) const {
  throw Error(ErrorKind::bad_input,
              "a lock kept as a plain string keeps no record of runs");
}

} // namespace rlock::lock

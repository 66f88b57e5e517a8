// --compat string and shedlock: a lock kept as one plain string key, as the
// SET-NX family of libraries keeps it (docs/sharing.md).

#include <rlock/redis/cluster.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/redis/replication.hpp>
#include <rlock/redis/script.hpp>
#include <rlock/redis/scripts.hpp>
#include <rlock/redis/sentinel.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/store/protocol.hpp>
#include <rlock/store/replies.hpp>
#include <rlock/store/string_store.hpp>
#include <rlock/store/wakeups.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/random.hpp>
#include <rlock/util/text.hpp>

#include <chrono>
#include <ctime>

namespace rlock::lock {

namespace {

// True when `name` has a Redis Cluster hash tag: a '{' with a later '}' and
// something between them.
bool
has_hash_tag(std::string_view name) {
  const auto open = name.find('{');
  if (open == std::string_view::npos) {
    return false;
  }
  const auto close = name.find('}', open + 1);
  return close != std::string_view::npos && close > open + 1;
}

// The reply's element `i` as text ("" when nil or missing).
std::string
text_at(const redis::Reply& reply, std::size_t i) {
  if (i >= reply.elements.size() || reply.elements[i].is_nil()) {
    return {};
  }
  return reply.elements[i].text;
}

// The reply's element `i` as an integer (`fallback` when not one).
std::int64_t
integer_at(const redis::Reply& reply, std::size_t i, std::int64_t fallback) {
  if (i >= reply.elements.size()
      || reply.elements[i].type != redis::Reply::Type::integer) {
    return fallback;
  }
  return reply.elements[i].integer;
}

// Throws Failure (unexpected_reply): the key holds something that is not a
// lock of this style, which is never taken or shared.
[[noreturn]] void
throw_wrong_type(const StringKeys& keys, const std::string& type) {
  throw redis::Failure(redis::FailureKind::unexpected_reply,
                       "key " + quote(keys.lock) + " holds a " + type
                           + ", not a string: it is not a lock of the string "
                             "style, and is neither taken nor shared");
}

// Returns the server (or the master the sentinels name now) of `deployment`.
redis::Endpoint
locate(Deployment& deployment, const redis::ConnectOptions& options) {
  if (auto* sentinel = std::get_if<Sentinel>(&deployment.topology)) {
    return redis::locate_master(sentinel->master, options);
  }
  return std::get<Single>(deployment.topology).endpoint;
}

} // namespace

StringKeys
string_keys_for(const Compat& compat,
                std::string_view prefix,
                std::string_view name) {
  StringKeys keys;
  keys.name = std::string(name);
  keys.lock = compat.style == LockStyle::shedlock
                  ? "job-lock:" + compat.shedlock_env + ":" + keys.name
                  : keys.name;
  const std::string side = side_key_stem(prefix, keys.lock);
  keys.wake = side + ":wake";
  keys.fence = side + ":fence";
  return keys;
}

std::string
side_key_stem(std::string_view prefix, std::string_view key) {
  // The key's own hash tag: PREFIX then the key keeps the key's first '{'.
  if (has_hash_tag(key)) {
    return std::string(prefix) + std::string(key);
  }
  // The whole key as the tag, unless a '}' in it would end the tag early.
  if (key.find('}') == std::string_view::npos) {
    return std::string(prefix) + "{" + std::string(key) + "}";
  }
  const int slot = redis::key_slot(key);
  for (unsigned n = 0;; ++n) {
    const std::string tag = "slot-" + std::to_string(n);
    if (redis::key_slot(tag) == slot) {
      return std::string(prefix) + "{" + tag + "}";
    }
  }
}

std::string
shedlock_value(std::int64_t epoch_ms, std::string_view host) {
  // ShedLock writes Instant.toString(): ISO-8601 in UTC, milliseconds
  // shown when not zero.
  const std::time_t seconds = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::string value = "ADDED:" + std::string(stamp);
  if (const auto ms = epoch_ms % 1000; ms != 0) {
    char fraction[8];
    std::snprintf(fraction, sizeof fraction, ".%03d", static_cast<int>(ms));
    value += fraction;
  }
  return value + "Z@" + std::string(host);
}

StringStore::StringStore(Deployment deployment, bool cluster_node)
    : m_deployment(std::move(deployment)), m_cluster_node(cluster_node),
      m_redis(std::make_unique<RedisStore>(m_deployment, cluster_node)) {
}

std::unique_ptr<LockStore>
StringStore::another() const {
  auto store = std::make_unique<StringStore>(m_deployment, m_cluster_node);
  store->m_redis->require_replicas(m_redis->required_replicas());
  return store;
}

LockStore&
StringStore::inner() const {
  return *m_redis;
}

RedisStore&
StringStore::redis() const {
  return *m_redis;
}

StringKeys
StringStore::keys(std::string_view name) const {
  return string_keys_for(m_deployment.compat, m_deployment.prefix, name);
}

std::string
StringStore::key_of(std::string_view name) const {
  return keys(name).lock;
}

template <typename Step>
auto
StringStore::on_connection(Step&& step) {
  try {
    return step(m_redis->session());
  } catch (...) {
    m_redis->disconnect();
    throw;
  }
}

template <typename Step>
auto
StringStore::on_master(Step&& step) {
  try {
    return step(m_redis->master_session());
  } catch (...) {
    m_redis->disconnect();
    throw;
  }
}

AcquireAttempt
StringStore::acquire(const LockRequest& request, const WaiterEntry&) {
  const auto k = keys(request.name);
  // A plain string has room for one value: the token, or ShedLock's
  // "ADDED:<instant>@<host>" with ":<token>" after it (as ShedLock's newer
  // versions add a UUID), which the scripts match by its end.
  std::string value = request.token;
  if (m_deployment.compat.style == LockStyle::shedlock) {
    const auto epoch_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count();
    value = shedlock_value(epoch_ms, request.holder.host) + ":" + request.token;
  }
  const auto sent = boot_now();
  const auto reply = on_master([&](redis::Connection& c) {
    return redis::run_script(c,
                             redis::k_string_acquire_script,
                             {k.lock, k.fence},
                             {value, milliseconds_of(request.ttl)});
  });
  const std::string what = "cannot acquire lock " + quote(request.name);
  redis::throw_if_error(reply, what);
  const std::string verdict = text_at(reply, 0);
  if (verdict == "granted") {
    Granted granted;
    granted.fence = integer_at(reply, 1, 0);
    granted.sent = sent;
    try {
      granted.replicas = on_connection([&](redis::Connection& c) {
        return m_redis->confirm_write(
            c, "taking " + quote(request.name), request.ttl / 4);
      });
    } catch (const redis::Failure&) {
      release_quietly(request.name, request.token);
      throw;
    }
    return granted;
  }
  if (verdict == "wrongtype") {
    throw_wrong_type(k, text_at(reply, 1));
  }
  if (verdict != "busy") {
    throw redis::Failure(redis::FailureKind::unexpected_reply,
                         what + ": unexpected reply from the script");
  }
  Busy busy;
  busy.holder = text_at(reply, 1);
  const auto pttl = integer_at(reply, 2, -1);
  busy.retry_ms = pttl;
  busy.holders = 1;
  // The library sends no wake-up when it releases: look again soon.
  busy.polled = true;
  return busy;
}

PeekResult
StringStore::peek(std::string_view name) {
  const auto k = keys(name);
  const auto reply = on_connection([&](redis::Connection& c) {
    return redis::run_script(
        c, redis::k_string_look_script, {k.lock, k.wake}, {"look", ""});
  });
  redis::throw_if_error(reply, "cannot read lock " + quote(name));
  const std::string type = text_at(reply, 0);
  if (type == "none") {
    return Free{};
  }
  if (type != "string") {
    throw_wrong_type(k, type);
  }
  Busy busy;
  busy.holder = text_at(reply, 1);
  busy.retry_ms = integer_at(reply, 2, -1);
  busy.holders = 1;
  busy.polled = true;
  return busy;
}

std::int64_t
StringStore::lease_remaining_ms(std::string_view name) {
  const auto k = keys(name);
  return on_connection([&](redis::Connection& c) {
    return decode_pttl(c.command({"PTTL", k.lock}),
                       "cannot read lock " + quote(name));
  });
}

Renewal
StringStore::renew(std::string_view name,
                   const std::string& token,
                   Duration ttl,
                   RenewMode mode) {
  if (ttl == Duration::zero()) {
    throw Error(ErrorKind::bad_input,
                "a lock kept as a plain string records no lease length: "
                "the new length must be given");
  }
  const auto k = keys(name);
  const auto reply = on_master([&](redis::Connection& c) {
    return redis::run_script(c,
                             redis::k_string_renew_script,
                             {k.lock},
                             {token,
                              milliseconds_of(ttl),
                              mode == RenewMode::exact ? "exact" : "at_least"});
  });
  // An error first (a Cluster's MOVED or ASK, which the caller follows).
  redis::throw_if_error(reply, "cannot renew lock " + quote(name));
  const auto before =
      redis::integer_of(reply, "cannot renew lock " + quote(name));
  Renewal renewal;
  renewal.held = before != -2;
  renewal.remaining_before_ms = before;
  if (renewal.held) {
    on_connection([&](redis::Connection& c) {
      return m_redis->confirm_write(c, "renewing " + quote(name), ttl / 4);
    });
  }
  return renewal;
}

bool
StringStore::release(std::string_view name, const std::string& token) {
  const auto k = keys(name);
  const auto reply = on_master([&](redis::Connection& c) {
    return redis::run_script(c,
                             redis::k_string_release_script,
                             {k.lock, k.wake},
                             {token, "wake", k.wake + ":released"});
  });
  redis::throw_if_error(reply, "cannot release lock " + quote(name));
  return redis::integer_of(reply, "cannot release lock " + quote(name)) == 1;
}

void
StringStore::release_quietly(std::string_view name,
                             const std::string& token) noexcept {
  try {
    auto deployment = m_deployment;
    const Duration bound = std::chrono::seconds(1);
    deployment.connect.connect_timeout =
        std::min(deployment.connect.connect_timeout, bound);
    deployment.connect.io_timeout =
        std::min(deployment.connect.io_timeout, bound);
    StringStore store(std::move(deployment), m_cluster_node);
    store.release(name, token);
  } catch (...) {
    // The lease expires by itself.
  }
}

std::optional<Duration>
StringStore::check(std::string_view name, const std::string& token) {
  const auto k = keys(name);
  const auto reply = on_connection([&](redis::Connection& c) {
    return redis::run_script(
        c, redis::k_string_look_script, {k.lock, k.wake}, {"look", ""});
  });
  redis::throw_if_error(reply, "cannot check lock " + quote(name));
  const std::string value = text_at(reply, 1);
  const bool ours =
      value == token || (!token.empty() && value.ends_with(":" + token));
  if (text_at(reply, 0) != "string" || !ours) {
    return std::nullopt;
  }
  const auto pttl = integer_at(reply, 2, -1);
  return pttl < 0 ? Duration::max() : from_milliseconds(pttl);
}

std::optional<BrokenLock>
StringStore::force_release(std::string_view name) {
  const auto k = keys(name);
  const auto reply = on_connection([&](redis::Connection& c) {
    return redis::run_script(c,
                             redis::k_string_look_script,
                             {k.lock, k.wake},
                             {"break", k.wake + ":released"});
  });
  redis::throw_if_error(reply, "cannot break lock " + quote(name));
  const std::string type = text_at(reply, 0);
  if (type == "none") {
    return std::nullopt;
  }
  if (type != "string") {
    throw_wrong_type(k, type);
  }
  BrokenLock broken;
  broken.token = text_at(reply, 1);
  broken.holder = broken.token;
  return broken;
}

void
StringStore::leave_queue(std::string_view, const std::string&) {
  // No queue: a waiter that gives up leaves nothing behind.
}

Slot
StringStore::current_slot(std::string_view, Duration) {
  throw Error(ErrorKind::bad_input,
              "a lock kept as a plain string keeps no record of runs");
}

void
StringStore::mark_slot_done(std::string_view, std::int64_t, Duration) {
  throw Error(ErrorKind::bad_input,
              "a lock kept as a plain string keeps no record of runs");
}

std::unique_ptr<Wakeups>
StringStore::watch(std::string_view name, const std::string&) {
  const auto options = bounded_by(m_deployment.connect, std::nullopt);
  return std::make_unique<ListWakeups>(redis::WakeList::open(
      locate(m_deployment, options), options, {keys(name).wake}));
}

std::unique_ptr<Wakeups>
StringStore::watch_releases(std::string_view name) {
  const auto options = bounded_by(m_deployment.connect, std::nullopt);
  return std::make_unique<ReleaseWakeups>(redis::Subscription::open(
      locate(m_deployment, options), options, {keys(name).wake + ":released"}));
}

StatusSnapshot
StringStore::read_locks(const std::vector<std::string>& names) {
  StatusSnapshot snapshot;
  for (const auto& name : names) {
    const auto k = keys(name);
    const auto reply = on_connection([&](redis::Connection& c) {
      return redis::run_script(
          c, redis::k_string_look_script, {k.lock, k.wake}, {"look", ""});
    });
    redis::throw_if_error(reply, "cannot read lock " + quote(name));
    LockState state;
    state.name = name;
    state.key = k.lock;
    const std::string type = text_at(reply, 0);
    if (type != "none" && type != "string") {
      throw_wrong_type(k, type);
    }
    state.held = type == "string";
    if (state.held) {
      state.token = text_at(reply, 1);
      state.ttl_ms = integer_at(reply, 2, -1);
      // The value is all the key tells of its holder: shown where rlock's
      // own locks show the command.
      state.command = "value " + quote(state.token);
      if (m_deployment.compat.style == LockStyle::shedlock) {
        // "ADDED:<instant>@<host>[:<uuid>]": the host is ShedLock's word
        // for its holder.
        const auto at = state.token.find('@');
        if (at != std::string::npos) {
          const auto end = state.token.find(':', at + 1);
          state.host = state.token.substr(
              at + 1, end == std::string::npos ? end : end - at - 1);
        }
      }
    }
    snapshot.locks.push_back(std::move(state));
  }
  return snapshot;
}

StatusSnapshot
StringStore::list_locks(std::string_view) {
  throw Error(ErrorKind::bad_input,
              "a lock kept as a plain string cannot be told from other "
              "keys: name the locks to show");
}

} // namespace rlock::lock

// --compat string and shedlock: a lock kept as one plain string key, as the
// SET-NX family of libraries keeps it (docs/sharing.md).

#include <rlock/redis/failure.hpp>
#include <rlock/redis/replication.hpp>
#include <rlock/redis/script.hpp>
#include <rlock/redis/scripts.hpp>
#include <rlock/redis/sentinel.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/store/protocol.hpp>
#include <rlock/store/replies.hpp>
#include <rlock/store/string_layout.hpp>
#include <rlock/store/string_store.hpp>
#include <rlock/store/wakeups.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/random.hpp>
#include <rlock/util/text.hpp>

#include <chrono>

namespace rlock::lock {

namespace {

// What failed, for messages ("cannot <verb> lock 'NAME'"), naming the key
// too when it is not NAME (ShedLock's job-lock:ENV:NAME).
std::string
what_of(const std::string& verb, const StringKeys& keys) {
  std::string what = "cannot " + verb + " lock " + quote(keys.name);
  if (keys.lock != keys.name) {
    what += " (key " + quote(keys.lock) + ")";
  }
  return what;
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
  const auto reply = m_redis->on_current_master([&](redis::Connection& c) {
    return redis::run_script(c,
                             redis::k_string_acquire_script,
                             {k.lock, k.fence},
                             {value, milliseconds_of(request.ttl)});
  });
  auto attempt = decode_string_acquire(reply, what_of("acquire", k));
  if (auto* granted_ptr = std::get_if<Granted>(&attempt)) {
    Granted& granted = *granted_ptr;
    granted.sent = sent;
    try {
      granted.replicas = m_redis->on_connection([&](redis::Connection& c) {
        return m_redis->confirm_write(
            c, "taking " + quote(request.name), request.ttl / 4);
      });
    } catch (const redis::Failure&) {
      release_quietly(request.name, request.token);
      throw;
    }
  }
  // Busy: the library sends no wake-up when it releases, so the waiter
  // looks again soon (Busy::polled).
  return attempt;
}

PeekResult
StringStore::peek(std::string_view name) {
  const auto k = keys(name);
  const auto reply = m_redis->on_connection([&](redis::Connection& c) {
    return redis::run_script(
        c, redis::k_string_look_script, {k.lock, k.wake}, {"look", ""});
  });
  return decode_string_peek(reply, what_of("read", k));
}

std::int64_t
StringStore::lease_remaining_ms(std::string_view name) {
  const auto k = keys(name);
  return m_redis->on_connection([&](redis::Connection& c) {
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
  const auto reply = m_redis->on_current_master([&](redis::Connection& c) {
    return redis::run_script(c,
                             redis::k_string_renew_script,
                             {k.lock},
                             {token,
                              milliseconds_of(ttl),
                              mode == RenewMode::exact ? "exact" : "at_least"});
  });
  // An error reply (a Cluster's MOVED or ASK, which the caller follows)
  // throws as itself.
  const auto renewal = decode_string_renew(reply, what_of("renew", k));
  if (renewal.held) {
    m_redis->on_connection([&](redis::Connection& c) {
      return m_redis->confirm_write(c, "renewing " + quote(name), ttl / 4);
    });
  }
  return renewal;
}

bool
StringStore::release(std::string_view name, const std::string& token) {
  const auto k = keys(name);
  const auto reply = m_redis->on_current_master([&](redis::Connection& c) {
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
  const auto reply = m_redis->on_connection([&](redis::Connection& c) {
    return redis::run_script(
        c, redis::k_string_look_script, {k.lock, k.wake}, {"look", ""});
  });
  return decode_string_check(reply, token, what_of("check", k));
}

std::optional<BrokenLock>
StringStore::force_release(std::string_view name) {
  const auto k = keys(name);
  const auto reply = m_redis->on_connection([&](redis::Connection& c) {
    return redis::run_script(c,
                             redis::k_string_look_script,
                             {k.lock, k.wake},
                             {"break", k.wake + ":released"});
  });
  return decode_string_force_release(reply, what_of("break", k));
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
    const auto reply = m_redis->on_connection([&](redis::Connection& c) {
      return redis::run_script(
          c, redis::k_string_look_script, {k.lock, k.wake}, {"look", ""});
    });
    const auto look = decode_string_peek(reply, what_of("read", k));
    LockState state;
    state.name = name;
    state.key = k.lock;
    const auto* busy = std::get_if<Busy>(&look);
    state.held = busy != nullptr;
    if (busy) {
      state.token = busy->holder;
      state.ttl_ms = busy->retry_ms;
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

#include <rlock/redis/failure.hpp>
#include <rlock/redis/script.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/store/protocol.hpp>
#include <rlock/store/redisson_store.hpp>
#include <rlock/store/string_keys.hpp>
#include <rlock/store/wakeups.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>

namespace rlock::lock {

namespace {

// LockPubSub.UNLOCK_MESSAGE, a Long written by LongCodec.
constexpr std::string_view k_unlock_message = "0";

// The thread part of rlock's field: one holder per run.
constexpr std::string_view k_thread = "1";

// True when `field` has Redisson's shape, "<id>:<thread id>".
bool
redisson_field(const std::string& field) {
  const auto colon = field.rfind(':');
  return colon != std::string::npos && colon > 0 && colon + 1 < field.size()
         && std::all_of(field.begin() + static_cast<long>(colon) + 1,
                        field.end(),
                        [](char c) { return c >= '0' && c <= '9'; });
}

[[noreturn]] void
throw_wrong_type(std::string_view name, const std::string& found) {
  throw Error(ErrorKind::unavailable,
              quote(name) + " holds a Redis " + printable(found)
                  + ", not Redisson's lock (a hash): not taken or shared");
}

// Checks that the hash's fields `fields` (from element `from` of `reply`)
// are Redisson's; throws as above when one is not.
std::vector<std::string>
fields_of(std::string_view name, const redis::Reply& reply, std::size_t from) {
  std::vector<std::string> fields;
  for (std::size_t i = from; i < reply.elements.size(); ++i) {
    auto field = redis::string_of(reply.elements[i], "Redisson's lock field");
    if (!redisson_field(field)) {
      throw Error(ErrorKind::unavailable,
                  quote(name) + " is a hash but not Redisson's lock (field "
                      + quote(printable(field)) + "): not taken or shared");
    }
    fields.push_back(std::move(field));
  }
  return fields;
}

std::string
text_at(const redis::Reply& reply, std::size_t i, const std::string& what) {
  if (!reply.is_array() || reply.elements.size() <= i) {
    throw redis::Failure(redis::FailureKind::unexpected_reply,
                         what + ": unexpected reply");
  }
  const auto& element = reply.elements[i];
  if (element.type == redis::Reply::Type::integer) {
    return std::to_string(element.integer);
  }
  return redis::string_of(element, what);
}

std::int64_t
integer_at(const redis::Reply& reply, std::size_t i, const std::string& what) {
  if (!reply.is_array() || reply.elements.size() <= i) {
    throw redis::Failure(redis::FailureKind::unexpected_reply,
                         what + ": unexpected reply");
  }
  return redis::integer_of(reply.elements[i], what);
}

// What redisson_look.lua found at NAME.
struct Look {
  std::string type;
  std::int64_t pttl = -2;
  std::int64_t now_ms = 0;
  std::vector<std::string> fields;
};

Look
look(redis::Connection& c, std::string_view name) {
  const std::string what = "looking at Redisson's lock " + quote(name);
  const auto reply = redis::run_script(
      c, redis::k_redisson_look_script, {std::string(name)}, {});
  redis::throw_if_error(reply, what);
  Look found;
  found.type = text_at(reply, 0, what);
  found.pttl = integer_at(reply, 1, what);
  found.now_ms = integer_at(reply, 2, what);
  if (found.type != "none" && found.type != "hash") {
    throw_wrong_type(name, found.type);
  }
  found.fields = fields_of(name, reply, 3);
  return found;
}

std::string
joined(const std::vector<std::string>& fields) {
  std::string text;
  for (const auto& field : fields) {
    text += (text.empty() ? "" : ",") + field;
  }
  return text;
}

Busy
busy_of(const Look& found) {
  Busy busy;
  busy.retry_ms = found.pttl >= 0 ? found.pttl : -1;
  busy.holder = "Redisson " + joined(found.fields);
  busy.holders = 1;
  return busy;
}

[[noreturn]] void
refuse(const std::string& what) {
  throw Error(ErrorKind::bad_input, "Redisson's lock layout has no " + what);
}

// A Cluster's steps go through ClusterStore, which makes a RedissonStore
// for each master (a `cluster_node`).
std::unique_ptr<RedisStore>
inner_store(const Deployment& deployment, bool cluster_node) {
  if (std::holds_alternative<Cluster>(deployment.topology)
      || std::holds_alternative<Quorum>(deployment.topology)) {
    throw Error(ErrorKind::bad_input,
                "Redisson's lock layout is kept here on one server, a "
                "Sentinel master or one master of a Redis Cluster, not on a "
                "quorum of servers");
  }
  return std::make_unique<RedisStore>(deployment, cluster_node);
}

} // namespace

RedissonStore::RedissonStore(const Deployment& deployment, bool cluster_node)
    : RedissonStore(
        deployment, cluster_node, inner_store(deployment, cluster_node)) {
}

RedissonStore::RedissonStore(const Deployment& deployment,
                             bool cluster_node,
                             std::unique_ptr<RedisStore> inner)
    : m_deployment(deployment), m_cluster_node(cluster_node),
      m_inner(std::move(inner)) {
}

std::unique_ptr<LockStore>
RedissonStore::another() const {
  auto store = std::make_unique<RedissonStore>(m_deployment, m_cluster_node);
  store->m_inner->require_replicas(m_inner->required_replicas());
  return store;
}

LockStore&
RedissonStore::inner() const {
  return *m_inner;
}

RedisStore&
RedissonStore::redis() const {
  return *m_inner;
}

std::string
RedissonStore::sharded_argument() const {
  return m_cluster_node ? "sharded" : "";
}

std::string
RedissonStore::channel_of(std::string_view name) {
  const std::string prefix = "redisson_lock__channel";
  if (name.find('{') != std::string_view::npos) {
    return prefix + ":" + std::string(name);
  }
  return prefix + ":{" + std::string(name) + "}";
}

std::string
RedissonStore::fence_key_of(std::string_view name) const {
  return side_key_stem(m_deployment.prefix, name) + ":fence";
}

std::string
RedissonStore::field_of(const std::string& token) {
  return token + ":" + std::string(k_thread);
}

std::string
RedissonStore::key_of(std::string_view name) const {
  return std::string(name);
}

AcquireAttempt
RedissonStore::acquire(const LockRequest& request, const WaiterEntry& entry) {
  if (request.limit != 0) {
    refuse("semaphore or shared hold");
  }
  if (entry.queue_ttl > Duration::zero()) {
    refuse("wait queue");
  }
  return m_inner->on_current_master(
      [&](redis::Connection& c) -> AcquireAttempt {
        const std::string what =
            "taking Redisson's lock " + quote(request.name);
        const auto sent = boot_now();
        const auto reply = redis::run_script(
            c,
            redis::k_redisson_take_script,
            {request.name, fence_key_of(request.name)},
            {field_of(request.token), milliseconds_of(request.ttl)});
        redis::throw_if_error(reply, what);
        const auto verdict = text_at(reply, 0, what);
        if (verdict == "granted") {
          Granted granted;
          granted.fence = integer_at(reply, 1, what);
          granted.sent = sent;
          try {
            granted.replicas = m_inner->confirm_write(c, what, request.ttl / 4);
          } catch (const redis::Failure&) {
            release_quietly(request.name, request.token);
            throw;
          }
          return granted;
        }
        if (verdict == "wrongtype") {
          throw_wrong_type(request.name, text_at(reply, 1, what));
        }
        Look found;
        found.type = "hash";
        found.pttl = integer_at(reply, 1, what);
        found.fields = fields_of(request.name, reply, 2);
        return busy_of(found);
      });
}

PeekResult
RedissonStore::peek(std::string_view name) {
  return m_inner->on_connection([&](redis::Connection& c) -> PeekResult {
    const auto found = look(c, name);
    if (found.type == "none") {
      return Free{};
    }
    return busy_of(found);
  });
}

std::int64_t
RedissonStore::lease_remaining_ms(std::string_view name) {
  return m_inner->on_connection([&](redis::Connection& c) {
    const auto found = look(c, name);
    return found.type == "none" ? std::int64_t{-2} : found.pttl;
  });
}

Renewal
RedissonStore::renew(std::string_view name,
                     const std::string& token,
                     Duration ttl,
                     RenewMode mode) {
  return m_inner->on_current_master([&](redis::Connection& c) {
    const auto reply =
        redis::run_script(c,
                          redis::k_redisson_renew_script,
                          {std::string(name)},
                          {field_of(token),
                           milliseconds_of(ttl),
                           mode == RenewMode::exact ? "exact" : "at_least"});
    // An error first (a Cluster's MOVED or ASK, which the caller follows).
    redis::throw_if_error(reply, "renewing Redisson's lock " + quote(name));
    Renewal renewal;
    renewal.remaining_before_ms =
        redis::integer_of(reply, "renewing Redisson's lock " + quote(name));
    renewal.held = renewal.remaining_before_ms != -2;
    if (renewal.held) {
      m_inner->confirm_write(
          c, "renewing Redisson's lock " + quote(name), ttl / 4);
    }
    return renewal;
  });
}

bool
RedissonStore::release(std::string_view name, const std::string& token) {
  return m_inner->on_current_master([&](redis::Connection& c) {
    const auto reply = redis::run_script(c,
                                         redis::k_redisson_release_script,
                                         {std::string(name)},
                                         {field_of(token),
                                          channel_of(name),
                                          std::string(k_unlock_message),
                                          sharded_argument()});
    const std::string what = "releasing Redisson's lock " + quote(name);
    redis::throw_if_error(reply, what);
    return redis::integer_of(reply, what) == 1;
  });
}

void
RedissonStore::release_quietly(std::string_view name,
                               const std::string& token) noexcept {
  try {
    auto deployment = m_deployment;
    deployment.connect.connect_timeout = std::min<Duration>(
        deployment.connect.connect_timeout, std::chrono::seconds(1));
    deployment.connect.io_timeout = std::min<Duration>(
        deployment.connect.io_timeout, std::chrono::seconds(1));
    RedissonStore(deployment, m_cluster_node).release(name, token);
  } catch (...) {
    // The lease expires by itself.
  }
}

std::optional<Duration>
RedissonStore::check(std::string_view name, const std::string& token) {
  return m_inner->on_connection(
      [&](redis::Connection& c) -> std::optional<Duration> {
        const auto found = look(c, name);
        const auto ours = field_of(token);
        if (std::find(found.fields.begin(), found.fields.end(), ours)
            == found.fields.end()) {
          return std::nullopt;
        }
        if (found.pttl == -1) {
          return Duration::max();
        }
        return from_milliseconds(std::max<std::int64_t>(found.pttl, 0));
      });
}

std::optional<BrokenLock>
RedissonStore::force_release(std::string_view name) {
  return m_inner->on_connection(
      [&](redis::Connection& c) -> std::optional<BrokenLock> {
        const std::string what = "breaking Redisson's lock " + quote(name);
        const auto reply = redis::run_script(c,
                                             redis::k_redisson_force_script,
                                             {std::string(name)},
                                             {channel_of(name),
                                              std::string(k_unlock_message),
                                              sharded_argument()});
        redis::throw_if_error(reply, what);
        const auto type = text_at(reply, 0, what);
        if (type == "none") {
          return std::nullopt;
        }
        if (type != "hash") {
          throw_wrong_type(name, type);
        }
        BrokenLock broken;
        for (std::size_t i = 1; i < reply.elements.size(); ++i) {
          broken.token += (i > 1 ? "," : "") + text_at(reply, i, what);
        }
        broken.holder = "Redisson " + broken.token;
        return broken;
      });
}

void
RedissonStore::leave_queue(std::string_view, const std::string&) {
  // No queue: nothing to leave.
}

Slot
RedissonStore::current_slot(std::string_view, Duration) {
  refuse("record of runs per period");
}

void
RedissonStore::mark_slot_done(std::string_view, std::int64_t, Duration) {
  refuse("record of runs per period");
}

std::unique_ptr<Wakeups>
RedissonStore::watch(std::string_view name, const std::string&) {
  return watch_releases(name);
}

// On a Cluster, a Redisson client in sharded mode SPUBLISHes its unlock
// message, which reaches only the shard channel's subscribers on the
// slot's master and replicas; one in the other mode PUBLISHes.
std::unique_ptr<Wakeups>
RedissonStore::watch_releases(std::string_view name) {
  const auto channel = channel_of(name);
  return std::make_unique<ReleaseWakeups>(
      m_inner->subscribe_to({channel},
                            m_cluster_node ? std::vector<std::string>{channel}
                                           : std::vector<std::string>{}));
}

StatusSnapshot
RedissonStore::read_locks(const std::vector<std::string>& names) {
  return m_inner->on_connection([&](redis::Connection& c) {
    StatusSnapshot snapshot;
    for (const auto& name : names) {
      const auto found = look(c, name);
      snapshot.server_now_ms = found.now_ms;
      LockState state;
      state.name = name;
      state.key = name;
      state.held = found.type == "hash";
      if (state.held) {
        state.ttl_ms = found.pttl;
        state.token = joined(found.fields);
        state.host = "Redisson";
        state.command = "Redisson " + state.token;
      }
      snapshot.locks.push_back(std::move(state));
    }
    return snapshot;
  });
}

StatusSnapshot
RedissonStore::list_locks(std::string_view) {
  throw Error(ErrorKind::bad_input,
              "Redisson's locks are not listed: name the lock");
}

} // namespace rlock::lock

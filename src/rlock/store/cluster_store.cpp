#include <rlock/lock/cluster_retry.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/store/cluster_store.hpp>
#include <rlock/store/string_keys.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <thread>

namespace rlock::lock {

namespace {

// The pause before asking again after TRYAGAIN: a slot's keys are being
// migrated, which takes milliseconds per key.
constexpr auto k_tryagain_pause = std::chrono::milliseconds(50);

void
take_stamp(LockState& state, const redis::HostPort& master, int slot) {
  state.cluster = ClusterPlace{master.address(), slot};
}

} // namespace

std::vector<redis::HostPort>
map_read_order(const redis::ClusterSeeds& cluster,
               const redis::SlotMap* old,
               const std::string& failed) {
  std::vector<redis::HostPort> order;
  std::optional<redis::HostPort> last;
  const auto add = [&](const redis::HostPort& node) {
    if (!failed.empty() && node.address() == failed) {
      last = node;
    } else if (std::find(order.begin(), order.end(), node) == order.end()) {
      order.push_back(node);
    }
  };
  if (old) {
    for (const auto& master : old->masters()) {
      add(master);
    }
    for (const auto& range : old->ranges) {
      for (const auto& replica : range.replicas) {
        add(replica);
      }
    }
  }
  for (const auto& seed : cluster.seeds) {
    add(seed);
  }
  if (last) {
    order.push_back(*last);
  }
  return order;
}

ClusterStore::ClusterStore(Deployment deployment)
    : m_deployment(std::move(deployment)) {
}

std::unique_ptr<LockStore>
ClusterStore::another() const {
  auto store = std::make_unique<ClusterStore>(m_deployment);
  store->m_map = m_map;
  store->m_map_stale = m_map_stale;
  store->m_moved = m_moved;
  store->m_failed = m_failed;
  store->m_served = m_served;
  store->m_required_replicas = m_required_replicas;
  return store;
}

LockKeys
ClusterStore::keys(std::string_view name) const {
  return keys_for(KeySpace{m_deployment.prefix, true}, name);
}

// The application's key with --compat (as StringStore and RedissonStore
// name it): its slot is the lock's.
std::string
ClusterStore::key_of(std::string_view name) const {
  switch (m_deployment.compat.style) {
  case LockStyle::rlock:
    break;
  case LockStyle::string:
  case LockStyle::shedlock:
    return string_keys_for(m_deployment.compat, m_deployment.prefix, name).lock;
  case LockStyle::redisson:
    return std::string(name);
  }
  return keys(name).lock;
}

int
ClusterStore::slot_of(std::string_view name) const {
  return redis::key_slot(key_of(name));
}

const redis::SlotMap&
ClusterStore::map() {
  if (!m_map || m_map_stale) {
    read_map();
  }
  return *m_map;
}

void
ClusterStore::read_map() {
  const auto& seeds = std::get<Cluster>(m_deployment.topology).seeds;
  m_map = redis::read_slot_map(
      seeds,
      map_read_order(seeds, m_map ? &*m_map : nullptr, m_failed),
      bounded_by(m_deployment.connect, m_deadline));
  m_map_stale = false;
  for (const auto& range : m_map->ranges) {
    for (int slot = range.first; slot <= range.last; ++slot) {
      m_served.set(static_cast<std::size_t>(slot));
    }
  }
}

void
ClusterStore::refuse_never_served(const std::string& what) const {
  std::vector<redis::SlotSpan> never;
  for (const auto& span : m_map->uncovered()) {
    for (int slot = span.first; slot <= span.last; ++slot) {
      if (m_served.test(static_cast<std::size_t>(slot))) {
        continue;
      }
      if (!never.empty() && never.back().last == slot - 1) {
        never.back().last = slot;
      } else {
        never.push_back({slot, slot});
      }
    }
  }
  if (!never.empty()) {
    throw redis::Failure(redis::FailureKind::refused,
                         what + ": slots " + redis::format_slot_spans(never)
                             + " are not served by any master of the "
                               "cluster (is it set up in full?)");
  }
}

redis::HostPort
ClusterStore::master_of(int slot) {
  if (const auto moved = m_moved.find(slot); moved != m_moved.end()) {
    return moved->second;
  }
  const auto* master = map().master_of(slot);
  if (!master) {
    // Read once more: a map read mid-failover may lack the new master.
    read_map();
    master = m_map->master_of(slot);
  }
  if (!master) {
    refuse_never_served("no master of the cluster serves slot "
                        + std::to_string(slot));
    throw redis::Failure(redis::FailureKind::not_master,
                         "no master of the cluster serves slot "
                             + std::to_string(slot) + " (slots "
                             + redis::format_slot_spans(m_map->uncovered())
                             + " are not served)");
  }
  return *master;
}

StyleStores&
ClusterStore::store_on(const redis::HostPort& master) {
  auto& node = m_stores[master.address()];
  if (!node.store) {
    Deployment deployment = m_deployment;
    deployment.topology =
        Single{std::get<Cluster>(m_deployment.topology).seeds.node(master)};
    node = style_stores(std::move(deployment), true);
    node.store->set_deadline(m_deadline);
  }
  node.redis->require_replicas(m_required_replicas);
  return node;
}

// MOVED, ASK and TRYAGAIN say the command did not run: asking again (where
// they point) is safe for every step. A failure after the command may have
// run is never retried here: the caller decides, as on one server.
template <typename Step>
auto
ClusterStore::routed(std::string_view name, Step&& step) {
  using Action = cluster::Retry::Action;
  const int slot = slot_of(name);
  cluster::Retry retry;
  for (int tries = 1;; ++tries) {
    const bool redirected = retry.action == Action::follow;
    const auto node = redirected ? retry.target : master_of(slot);
    auto& stores = store_on(node);
    m_last = node.address();
    try {
      if (redirected && retry.asking) {
        stores.redis->ask_next();
      }
      auto result = step(*stores.store, node, slot);
      if (!m_required_replicas) {
        m_required_replicas = stores.redis->required_replicas();
      }
      return result;
    } catch (const redis::Failure& failure) {
      const bool past_deadline =
          m_deadline && boot_now() + k_tryagain_pause >= *m_deadline;
      retry = cluster::retry_after(
          failure,
          {node, redirected, redirected && retry.asking, tries, past_deadline});
      if (retry.action == Action::master_down) {
        m_map_stale = true;
        m_failed = node.address();
        m_moved.erase(slot);
        throw redis::Failure(redis::FailureKind::not_master,
                             "master " + node.address() + " of slot "
                                 + std::to_string(slot)
                                 + " does not answer (a failover under "
                                   "way?): "
                                 + failure.what());
      }
      // A cluster that was never served in full is down for good.
      if (retry.check_coverage && m_map) {
        refuse_never_served(node.address() + ": " + failure.server_error());
      }
      if (retry.moved) {
        m_moved.insert_or_assign(slot, retry.target);
        m_map_stale = true;
      }
      if (retry.moved || retry.asking) {
        log::info(failure.server_error() + ": following it to "
                  + retry.target.address());
      }
      switch (retry.action) {
      case Action::give_up:
      case Action::master_down:
        throw;
      case Action::still_moving:
        throw redis::Failure(
            redis::FailureKind::server_error,
            "slot " + std::to_string(slot) + " is still being moved after "
                + std::to_string(tries) + " tries: " + failure.what(),
            "TRYAGAIN",
            failure.server_error());
      case Action::pause:
        std::this_thread::sleep_for(k_tryagain_pause);
        break;
      case Action::follow:
        break;
      }
    }
  }
}

AcquireAttempt
ClusterStore::acquire(const LockRequest& request, const WaiterEntry& entry) {
  return routed(request.name, [&](LockStore& store, auto&&, int) {
    return store.acquire(request, entry);
  });
}

PeekResult
ClusterStore::peek(std::string_view name) {
  return routed(
      name, [&](LockStore& store, auto&&, int) { return store.peek(name); });
}

std::int64_t
ClusterStore::lease_remaining_ms(std::string_view name) {
  return routed(name, [&](LockStore& store, auto&&, int) {
    return store.lease_remaining_ms(name);
  });
}

Renewal
ClusterStore::renew(std::string_view name,
                    const std::string& token,
                    Duration ttl,
                    RenewMode mode) {
  return routed(name, [&](LockStore& store, auto&&, int) {
    return store.renew(name, token, ttl, mode);
  });
}

bool
ClusterStore::release(std::string_view name, const std::string& token) {
  return routed(name, [&](LockStore& store, auto&&, int) {
    return store.release(name, token);
  });
}

void
ClusterStore::release_quietly(std::string_view name,
                              const std::string& token) noexcept {
  try {
    // No map read here: the bound is a second, and a lock that was taken
    // has one.
    if (const auto* master =
            m_map ? m_map->master_of(slot_of(name)) : nullptr) {
      store_on(*master).store->release_quietly(name, token);
    }
  } catch (...) {
    // The lease expires by itself.
  }
}

std::optional<Duration>
ClusterStore::check(std::string_view name, const std::string& token) {
  return routed(name, [&](LockStore& store, auto&&, int) {
    return store.check(name, token);
  });
}

std::optional<BrokenLock>
ClusterStore::force_release(std::string_view name) {
  return routed(name, [&](LockStore& store, auto&&, int) {
    return store.force_release(name);
  });
}

void
ClusterStore::leave_queue(std::string_view name, const std::string& token) {
  routed(name, [&](LockStore& store, auto&&, int) {
    store.leave_queue(name, token);
    return true;
  });
}

Slot
ClusterStore::current_slot(std::string_view name, Duration length) {
  return routed(name, [&](LockStore& store, auto&&, int) {
    return store.current_slot(name, length);
  });
}

void
ClusterStore::mark_slot_done(std::string_view name,
                             std::int64_t number,
                             Duration keep) {
  routed(name, [&](LockStore& store, auto&&, int) {
    store.mark_slot_done(name, number, keep);
    return true;
  });
}

// One name at a time: each may live on another master.
StatusSnapshot
ClusterStore::read_locks(const std::vector<std::string>& names) {
  StatusSnapshot snapshot;
  for (const auto& name : names) {
    auto one = routed(
        name, [&](LockStore& store, const redis::HostPort& node, int slot) {
          auto read = store.read_locks({name});
          take_stamp(read.locks.front(), node, slot);
          return read;
        });
    if (snapshot.locks.empty()) {
      snapshot.server_now_ms = one.server_now_ms;
    }
    snapshot.locks.push_back(std::move(one.locks.front()));
  }
  return snapshot;
}

// Every master lists its own keys; one that does not answer is named in
// `unreachable`, unless none answers.
StatusSnapshot
ClusterStore::list_locks(std::string_view match) {
  StatusSnapshot snapshot;
  bool answered = false;
  std::string reasons;
  for (const auto& master : map().masters()) {
    try {
      auto part = store_on(master).store->list_locks(match);
      if (!answered) {
        snapshot.server_now_ms = part.server_now_ms;
        answered = true;
      }
      for (auto& state : part.locks) {
        take_stamp(state, master, slot_of(state.name));
        snapshot.locks.push_back(std::move(state));
      }
    } catch (const redis::Failure& failure) {
      m_map_stale = true;
      if (cluster::connection_failed(failure)) {
        m_failed = master.address();
      }
      snapshot.unreachable.push_back({master.address(), failure.what()});
      reasons += (reasons.empty() ? "" : "; ") + master.address() + ": "
                 + failure.what();
    }
  }
  if (!answered) {
    throw redis::Failure(redis::FailureKind::refused,
                         "no master of the cluster answered (" + reasons + ")");
  }
  // A key copied during a slot migration is on two masters for a moment.
  std::sort(
      snapshot.locks.begin(),
      snapshot.locks.end(),
      [](const LockState& a, const LockState& b) { return a.name < b.name; });
  snapshot.locks.erase(std::unique(snapshot.locks.begin(),
                                   snapshot.locks.end(),
                                   [](const LockState& a, const LockState& b) {
                                     return a.name == b.name;
                                   }),
                       snapshot.locks.end());
  return snapshot;
}

// Each master that answers; a cluster none of whose masters answers fails.
std::vector<ServerFacts>
ClusterStore::examine() {
  std::vector<ServerFacts> facts;
  std::optional<redis::Failure> first_failure;
  for (const auto& master : map().masters()) {
    try {
      auto each = store_on(master).redis->examine();
      facts.insert(facts.end(), each.begin(), each.end());
    } catch (const redis::Failure& failure) {
      if (!first_failure) {
        first_failure = failure;
      }
    }
  }
  if (facts.empty() && first_failure) {
    throw *first_failure;
  }
  return facts;
}

std::optional<DeploymentState>
ClusterStore::deployment_state() {
  read_map();
  ClusterDeploymentState state;
  for (const auto& master : m_map->masters()) {
    ClusterShardState shard;
    try {
      shard = store_on(master).redis->describe_cluster_node();
    } catch (const redis::Failure& failure) {
      shard.master = master.address();
      shard.error = failure.what();
    }
    for (const auto& range : m_map->ranges) {
      if (range.master == master) {
        shard.slots += range.last - range.first + 1;
        shard.slot_spans.push_back({range.first, range.last});
      }
    }
    state.shards.push_back(std::move(shard));
  }
  state.uncovered_slots = m_map->uncovered();
  return state;
}

std::unique_ptr<Wakeups>
ClusterStore::watch(std::string_view name, const std::string& token) {
  // The lists live on the slot's master: when the slot moves, the server
  // ends the wait with MOVED, and the waiter looks and watches again.
  return routed(name, [&](LockStore& store, auto&&, int) {
    return store.watch(name, token);
  });
}

std::unique_ptr<Wakeups>
ClusterStore::watch_releases(std::string_view name) {
  // PUBLISH reaches every node of a cluster, so a subscription on the
  // master of now keeps hearing releases after the slot moves. SPUBLISH
  // (Redisson's, with --compat redisson) reaches the slot's shard only:
  // after a move the waiter hears it no more, and looks again when the
  // lease should have ended.
  return routed(name, [&](LockStore& store, auto&&, int) {
    return store.watch_releases(name);
  });
}

void
ClusterStore::connect() {
  map();
}

void
ClusterStore::disconnect() {
  for (auto& [address, node] : m_stores) {
    node.store->disconnect();
  }
}

void
ClusterStore::set_deadline(std::optional<BootTime> deadline) {
  m_deadline = deadline;
  for (auto& [address, node] : m_stores) {
    node.store->set_deadline(deadline);
  }
}

int
ClusterStore::idle_fd() const {
  const auto found = m_stores.find(m_last);
  return found == m_stores.end() ? -1 : found->second.redis->idle_fd();
}

bool
ClusterStore::idle_connection_broken() {
  const auto found = m_stores.find(m_last);
  return found != m_stores.end()
         && found->second.redis->idle_connection_broken();
}

} // namespace rlock::lock

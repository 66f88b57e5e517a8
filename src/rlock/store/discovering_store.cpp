#include <rlock/redis/failure.hpp>
#include <rlock/store/cluster_store.hpp>
#include <rlock/store/discovering_store.hpp>
#include <rlock/store/redis_store.hpp>
#include <rlock/store/style_stores.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

namespace rlock::lock {

namespace {

bool
says_cluster(const redis::Failure& failure) {
  return failure.server_code() == "MOVED"
         || failure.server_code() == "CROSSSLOT";
}

bool
has_brace(std::string_view text) {
  return text.find_first_of("{}") != std::string_view::npos;
}

// Asks the server of `single` whether it runs in cluster mode, on the
// connection its next step uses: nothing when it will not say.
std::optional<bool>
ask_cluster_mode(RedisStore& single) {
  try {
    auto& c = single.session();
    c.append({"INFO", "cluster"});
    c.append({"CLUSTER", "INFO"});
    const auto info = c.read_reply();
    const auto cluster_info = c.read_reply();
    return cluster_mode_of(info, cluster_info);
  } catch (...) {
    single.disconnect();
    throw;
  }
}

} // namespace

std::optional<bool>
cluster_mode_of(const redis::Reply& info, const redis::Reply& cluster_info) {
  if (info.is_string()) {
    // "...\r\ncluster_enabled:1\r\n..."; the field may open the text.
    constexpr std::string_view field = "cluster_enabled:";
    const std::string_view text = info.text;
    for (auto at = text.find(field); at != std::string_view::npos;
         at = text.find(field, at + 1)) {
      const auto value = text.substr(at + field.size(), 1);
      if ((at == 0 || text[at - 1] == '\n') && (value == "0" || value == "1")) {
        return value == "1";
      }
    }
  }
  if (cluster_info.is_string()) {
    return true;
  }
  if (cluster_info.is_error()
      && cluster_info.text.find("cluster support disabled")
             != std::string::npos) {
    return false;
  }
  return std::nullopt;
}

DiscoveringStore::DiscoveringStore(Deployment deployment)
    : DiscoveringStore(deployment, style_stores(deployment, false)) {
}

DiscoveringStore::DiscoveringStore(Deployment deployment, StyleStores single)
    : m_deployment(std::move(deployment)), m_store(std::move(single.store)),
      m_single(single.redis) {
}

std::unique_ptr<LockStore>
DiscoveringStore::another() const {
  if (m_cluster) {
    std::unique_ptr<DiscoveringStore> store(
        new DiscoveringStore(m_deployment, {m_store->another(), nullptr}));
    store->m_cluster = true;
    store->m_looked = true;
    return store;
  }
  auto single = style_stores(m_deployment, false);
  single.redis->require_replicas(m_single->required_replicas());
  std::unique_ptr<DiscoveringStore> store(
      new DiscoveringStore(m_deployment, std::move(single)));
  store->m_looked = m_looked;
  return store;
}

// rlock's own keys depend on whether the server is a cluster node when the
// NAME or prefix holds a brace; an application's (--compat) never do, as
// rlock's keys beside them carry a hash tag on one server too.
bool
DiscoveringStore::layout_depends_on_mode(std::string_view name) const {
  return m_deployment.compat.style == LockStyle::rlock
         && (has_brace(name) || has_brace(m_deployment.prefix));
}

// A brace in the prefix would split a lock's keys over slots, or put every
// lock in one: refused, as for a redis+cluster:// URL (cli/ checks that one
// before connecting).
void
DiscoveringStore::switch_to_cluster() {
  const auto& endpoint = std::get<Single>(m_deployment.topology).endpoint;
  if (has_brace(m_deployment.prefix)) {
    throw Error(ErrorKind::bad_input,
                "key prefix " + quote(m_deployment.prefix)
                    + ": must hold no brace with Redis Cluster ("
                    + endpoint.address()
                    + " is a cluster node; a brace would split a lock's "
                      "keys over slots)");
  }
  log::info(endpoint.address()
            + " is a Redis Cluster node: following its slot map");
  auto cluster = m_deployment;
  cluster.topology = Cluster{redis::ClusterSeeds{
      {redis::HostPort{endpoint.host, endpoint.port}}, endpoint}};
  m_store = std::make_unique<ClusterStore>(std::move(cluster));
  m_single = nullptr;
  m_store->set_deadline(m_deadline);
  m_cluster = true;
  m_looked = true;
}

void
DiscoveringStore::look_for_cluster(bool must_know) {
  if (m_looked) {
    return;
  }
  const auto cluster = ask_cluster_mode(*m_single);
  if (!cluster) {
    if (must_know) {
      throw Error(
          ErrorKind::unavailable,
          "cannot tell whether "
              + std::get<Single>(m_deployment.topology).endpoint.address()
              + " is a Redis Cluster node (it refused INFO and "
                "CLUSTER INFO), and the keys of a lock whose name or "
                "prefix holds a brace depend on it: allow INFO or "
                "CLUSTER INFO");
    }
    return; // not known: asked again before a step that must know
  }
  if (*cluster) {
    switch_to_cluster();
  }
  m_looked = true;
}

// Without a brace in the NAME and prefix, both layouts give the same keys,
// and a MOVED says which one holds: no question asked.
void
DiscoveringStore::settle_layout(std::string_view name) {
  if (!m_looked && layout_depends_on_mode(name)) {
    look_for_cluster(true);
  }
}

LockStore&
DiscoveringStore::inner() const {
  return *m_store;
}

void
DiscoveringStore::on_store(std::string_view name,
                           const std::function<void(LockStore&)>& step) {
  settle_layout(name);
  try {
    step(*m_store);
    return;
  } catch (const redis::Failure& failure) {
    if (m_cluster || !says_cluster(failure)) {
      throw;
    }
  }
  switch_to_cluster();
  step(*m_store);
}

void
DiscoveringStore::release_quietly(std::string_view name,
                                  const std::string& token) noexcept {
  // Nothing was taken under a layout not known yet.
  if (m_looked || !layout_depends_on_mode(name)) {
    m_store->release_quietly(name, token);
  }
}

StatusSnapshot
DiscoveringStore::read_locks(const std::vector<std::string>& names) {
  bool depends = layout_depends_on_mode("");
  for (const auto& name : names) {
    depends = depends || layout_depends_on_mode(name);
  }
  look_for_cluster(depends);
  return through<StatusSnapshot>(
      "", [&](LockStore& store) { return store.read_locks(names); });
}

StatusSnapshot
DiscoveringStore::list_locks(std::string_view match) {
  look_for_cluster(has_brace(m_deployment.prefix));
  return m_store->list_locks(match);
}

std::vector<ServerFacts>
DiscoveringStore::examine() {
  look_for_cluster(false);
  return m_store->examine();
}

std::optional<DeploymentState>
DiscoveringStore::deployment_state() {
  look_for_cluster(false);
  return m_store->deployment_state();
}

std::unique_ptr<Wakeups>
DiscoveringStore::watch(std::string_view name, const std::string& token) {
  settle_layout(name);
  return m_store->watch(name, token);
}

std::unique_ptr<Wakeups>
DiscoveringStore::watch_releases(std::string_view name) {
  settle_layout(name);
  return m_store->watch_releases(name);
}

void
DiscoveringStore::set_deadline(std::optional<BootTime> deadline) {
  m_deadline = deadline;
  m_store->set_deadline(deadline);
}

} // namespace rlock::lock

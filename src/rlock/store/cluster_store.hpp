#pragma once

#include <rlock/lock/deployment.hpp>
#include <rlock/redis/cluster.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/store/keys.hpp>
#include <rlock/store/redis_store.hpp>
#include <rlock/store/style_stores.hpp>

#include <bitset>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rlock::lock {

// Returns the nodes to ask for the slot map, in order, each once: the nodes
// of `old` (the map read last, if any; masters first), then the seeds, and
// the node whose address is `failed` (one that just did not answer: it may
// be frozen, and hold each read up for the whole timeout) last.
std::vector<redis::HostPort> map_read_order(const redis::ClusterSeeds& cluster,
                                            const redis::SlotMap* old,
                                            const std::string& failed);

// The store on a Redis Cluster: each step goes to the master that serves
// the slot of the lock's keys, as the slot map (CLUSTER SLOTS) says, on a
// RedisStore of that master's own. A MOVED reply is followed at once and
// the map read again before the next step; an ASK is followed with ASKING;
// TRYAGAIN (a slot half migrated) is tried again for up to a second. A
// master of the map that does not answer is a failover under way
// (not_master): the map is read again before the next step, asking that
// master last. Slots that no master serves, or a cluster that is down
// (CLUSTERDOWN) while some are not served, are a failover under way too
// once the store has seen those slots served; before that, a cluster not
// (fully) set up, which no waiting mends: refused.
//
// With --compat, each master's store is the style's (StringStore,
// RedissonStore) over that master's RedisStore, and the slot is the one of
// the application's key (NAME, job-lock:ENV:NAME); rlock's keys beside it
// share that slot (side_key_stem()).
class ClusterStore final : public LockStore {
public:
  explicit ClusterStore(Deployment deployment);

  std::unique_ptr<LockStore> another() const override;
  std::string key_of(std::string_view name) const override;
  AcquireAttempt acquire(const LockRequest& request,
                         const WaiterEntry& entry) override;
  PeekResult peek(std::string_view name) override;
  std::int64_t lease_remaining_ms(std::string_view name) override;
  Renewal renew(std::string_view name,
                const std::string& token,
                Duration ttl,
                RenewMode mode) override;
  bool release(std::string_view name, const std::string& token) override;
  void release_quietly(std::string_view name,
                       const std::string& token) noexcept override;
  std::optional<Duration> check(std::string_view name,
                                const std::string& token) override;
  std::optional<BrokenLock> force_release(std::string_view name) override;
  void leave_queue(std::string_view name, const std::string& token) override;
  Slot current_slot(std::string_view name, Duration length) override;
  void mark_slot_done(std::string_view name,
                      std::int64_t number,
                      Duration keep) override;
  StatusSnapshot read_locks(const std::vector<std::string>& names) override;
  StatusSnapshot list_locks(std::string_view match) override;
  std::vector<ServerFacts> examine() override;
  std::optional<DeploymentState> deployment_state() override;
  std::unique_ptr<Wakeups> watch(std::string_view name,
                                 const std::string& token) override;
  std::unique_ptr<Wakeups> watch_releases(std::string_view name) override;
  void connect() override;
  void disconnect() override;
  void set_deadline(std::optional<BootTime> deadline) override;
  int idle_fd() const override;
  bool idle_connection_broken() override;

private:
  LockKeys keys(std::string_view name) const;
  int slot_of(std::string_view name) const;
  // Returns the slot map, read first when there is none or it is stale.
  const redis::SlotMap& map();
  // Reads the slot map again, asking the nodes of the old map first and
  // the master that last did not answer (m_failed) last.
  void read_map();
  // Throws Failure (refused) when the map leaves slots unserved that no
  // map read by this store served: `what` says what happened.
  void refuse_never_served(const std::string& what) const;
  // Returns the master that serves `slot` (where a MOVED sent it, else as
  // the map says); throws Failure (not_master) when none does.
  redis::HostPort master_of(int slot);
  // Returns the stores on `master` (style_stores()), made at first use.
  StyleStores& store_on(const redis::HostPort& master);

  // Runs `step` on the store of the master that serves lock `name`,
  // following redirections (cluster::retry_after() decides).
  template <typename Step>
  auto routed(std::string_view name, Step&& step);

  Deployment m_deployment;
  std::optional<redis::SlotMap> m_map;
  bool m_map_stale = false;
  // Where a MOVED last sent each slot: newer than any map read since, as a
  // node that is asked may not have heard of the move yet.
  std::map<int, redis::HostPort> m_moved;
  std::map<std::string, StyleStores> m_stores; // by address
  std::string m_last; // the address of the last step's master, for idle_fd
  // The master that last did not answer: asked last for the map, as it may
  // be frozen and hold each read up for the step's whole time.
  std::string m_failed;
  // The slots some map read by this store (or the one it came from) had a
  // master for: a slot without one since is a failover under way.
  std::bitset<redis::k_cluster_slots> m_served;
  std::optional<BootTime> m_deadline;
  // As in RedisStore, fixed at the first acquire on whichever master, and
  // held to on every master the lock moves to.
  std::optional<int> m_required_replicas;
};

} // namespace rlock::lock

#pragma once

#include <rlock/lock/deployment.hpp>
#include <rlock/lock/store.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/redis/sentinel.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/store/keys.hpp>

#include <optional>

namespace rlock::lock {

// The store on one Redis master: each step one script (store/protocol.cpp)
// on one connection, opened at the first step and again after a failure.
// With Sentinel, every new connection goes to the master the sentinels name
// then, checked with ROLE. With a replica policy, the acquire and each
// renewal count only once enough replicas confirmed them (WAIT). With a
// Cluster, it is the store on one master (ClusterStore routes to it).
class RedisStore final : public LockStore {
public:
  // `deployment` is one server or a Sentinel master. A `cluster_node` is the
  // store on one master of a Cluster (ClusterStore routes to it): its keys
  // carry the Cluster's brace-free hash tags.
  explicit RedisStore(Deployment deployment, bool cluster_node = false);

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

  // Sends ASKING before the next step: a Cluster slot being migrated to
  // this node answers for one command (an ASK redirection).
  void ask_next();

  // Returns the replicas each write waits for, once the first acquire fixed
  // it; require_replicas() hands it to a store on another node.
  std::optional<int> required_replicas() const;
  void require_replicas(std::optional<int> replicas);

  // Returns what this Cluster master says of its replicas and the cluster.
  ClusterShardState describe_cluster_node();

  // For a store that drives the connection itself (QuorumStore's fan-out):
  // returns it, made now if there is none (with Sentinel: to the master
  // named now), bounded by the deadline, sending ASKING before each command
  // when ask_next() asked for it. Throws Failure. disconnect() after an
  // exchange on it failed.
  redis::Connection& session();

  // For QuorumStore: takes `connection`, opened by the caller on this
  // store's server (redis::dial_all()), as the next steps' (not with
  // Sentinel, which must be asked where the master is).
  void adopt(redis::Connection connection);

  // Runs `step` on the session, as every step of this store (and of a
  // style's store over it, --compat) runs: a failure drops the connection,
  // and with Sentinel a READONLY reply (the master demoted) is a failover
  // under way (not_master). Throws Failure.
  template <typename Step>
  auto on_connection(Step&& step);
  // The same for a step that must reach the master of now: with Sentinel,
  // a connection made before a failover may reach the old master, which
  // goes on answering as one until Sentinel demotes it, so the sentinels
  // are asked first whenever the connection is not new.
  template <typename Step>
  auto on_current_master(Step&& step);

  // After a write on `c` (`what`, for messages; `limit` bounds the wait):
  // the replicas the policy asks for confirm it and, with Sentinel, the
  // sentinels still name `c`'s server as master with no failover under way
  // (a write confirmed during a graceful failover is lost). Returns how
  // many replicas confirmed. Throws Failure (unconfirmed, not_master).
  int
  confirm_write(redis::Connection& c, const std::string& what, Duration limit);

  // Returns how many replicas must confirm each write made on `c`, fixed at
  // the first call as by the first acquire.
  int replicas_to_confirm(redis::Connection& c);

  // Subscribes to `channels` and the shard channels `shard_channels` on
  // this store's server (with Sentinel: the master named now), for a lock
  // style that hears its releases there (store/redisson_store.cpp). Throws
  // Failure.
  redis::Subscription
  subscribe_to(const std::vector<std::string>& channels,
               const std::vector<std::string>& shard_channels = {});

  // Returns the keys of lock `name`.
  LockKeys keys(std::string_view name) const;

  // Returns where the server, or the first sentinel, is, for messages.
  std::string address() const;

private:
  // Returns the connection for the next step, connected and bounded by the
  // deadline. A failure drops it, so that the next step connects again.
  redis::Connection& connection();
  // Opens a connection to the server, or to the master Sentinel names now.
  redis::Connection open_connection(const redis::ConnectOptions& options);
  // Returns where the server, or the master Sentinel names now, is.
  redis::Endpoint locate(const redis::ConnectOptions& options);
  KeySpace key_space() const;
  redis::ConnectOptions bounded_options() const;
  // Waits until the replicas the policy asks for confirmed the write just
  // made on `c` (`what`, for messages); `limit` bounds the wait. Returns how
  // many confirmed. Throws Failure (unconfirmed) when too few did.
  int confirm(redis::Connection& c, const std::string& what, Duration limit);

  // Renews on `c`; with Sentinel, sets *moved (when given) instead of
  // throwing when the sentinels name another master.
  Renewal renew_on(redis::Connection& c,
                   std::string_view name,
                   const std::string& token,
                   Duration ttl,
                   RenewMode mode,
                   bool* moved);
  // Where the sentinels stand on `c`'s master after a confirmed write.
  redis::MasterStanding sentinels_on(redis::Connection& c);

  // Drops the connection and throws what the failed step means (see
  // on_connection()).
  [[noreturn]] void fail_step(const redis::Failure& failure);
  // With Sentinel: throws Failure (not_master) unless the sentinels still
  // name `c`'s server as the master.
  void check_still_master(redis::Connection& c);

  // The Sentinel master the connections go to; null for one server.
  redis::SentinelMaster* sentinel();
  const redis::SentinelMaster* sentinel() const;
  // The server the connections go to (with Sentinel, the data nodes' login).
  const redis::Endpoint& endpoint() const;

  Deployment m_deployment;
  bool m_cluster_node = false;
  std::optional<redis::Connection> m_connection;
  std::optional<BootTime> m_deadline;
  // Replicas that must confirm each write, fixed at the first acquire (and
  // handed on by another()): never lowered during a run.
  std::optional<int> m_required_replicas;
  // The replicas ROLE counted when the current connection was made (with
  // Sentinel), so that resolving the policy needs no second ROLE.
  std::optional<int> m_connected_replicas;
  bool m_asking = false;
};

template <typename Step>
auto
RedisStore::on_connection(Step&& step) {
  try {
    auto& c = session();
    auto result = step(c);
    c.set_asking(false);
    return result;
  } catch (const redis::Failure& failure) {
    fail_step(failure);
  } catch (...) {
    m_connection.reset();
    throw;
  }
}

template <typename Step>
auto
RedisStore::on_current_master(Step&& step) {
  const bool reused = m_connection.has_value();
  return on_connection([&](redis::Connection& c) {
    if (reused) {
      check_still_master(c);
    }
    return step(c);
  });
}

} // namespace rlock::lock

#pragma once

#include <rlock/lock/deployment.hpp>
#include <rlock/store/forwarding_store.hpp>
#include <rlock/store/redis_store.hpp>
#include <rlock/store/string_keys.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rlock::lock {

// A lock kept as the SET-NX family of libraries keeps it (redis-py's Lock,
// redsync, node-redlock, ShedLock): one string key holding the holder's
// token, taken with SET NX PX, renewed by compare-and-PEXPIRE and released
// by compare-and-DEL, so that rlock and the application exclude each
// other. The libraries send no wake-up: a waiter polls (Busy::polled); an
// rlock holder's release also pushes a wake-up onto rlock's list beside
// the key. A key of another type is never taken (Failure). The session and
// the survey of the servers are the RedisStore's. On a Redis Cluster,
// ClusterStore routes each step to the StringStore of the key's master.
class StringStore final : public ForwardingStore {
public:
  // `deployment` is one server or a Sentinel master; a `cluster_node` is
  // one master of a Cluster (ClusterStore routes to it).
  explicit StringStore(Deployment deployment, bool cluster_node = false);

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
  std::unique_ptr<Wakeups> watch(std::string_view name,
                                 const std::string& token) override;
  std::unique_ptr<Wakeups> watch_releases(std::string_view name) override;
  StatusSnapshot read_locks(const std::vector<std::string>& names) override;
  StatusSnapshot list_locks(std::string_view match) override;

  // Returns the store on the server whose session the steps use
  // (ClusterStore sends ASKING and fixes the replicas through it).
  RedisStore& redis() const;

protected:
  LockStore& inner() const override;

private:
  StringKeys keys(std::string_view name) const;

  Deployment m_deployment;
  bool m_cluster_node = false;
  std::unique_ptr<RedisStore> m_redis;
};

} // namespace rlock::lock

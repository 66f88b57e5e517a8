#pragma once

#include <rlock/lock/deployment.hpp>
#include <rlock/store/forwarding_store.hpp>
#include <rlock/store/redis_store.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace rlock::lock {

// --compat redisson: the lock kept as Redisson's RLock keeps it
// (redisson/redisson: RedissonLock.java, RedissonBaseLock.java,
// pubsub/LockPubSub.java), so that a Java application's RLock and rlock
// exclude each other. NAME is the key as given: a hash whose one field
// "<id>:<thread>" holds the hold count, with a PEXPIRE lease; rlock's field
// is "<token>:1". A release deletes it and publishes Redisson's unlock
// message ("0") on "redisson_lock__channel:{NAME}", which wakes Redisson's
// waiters at once; rlock's waiters listen on the same channel, so a
// Redisson holder's unlock wakes them too. A key of another type is never
// taken: the steps throw Error (unavailable) saying what was found.
//
// One server, a Sentinel master, or one master of a Redis Cluster
// (ClusterStore routes each step to the store of NAME's master): the
// session, the survey's examine() and deployment_state() are the inner
// RedisStore's. On a Cluster, Redisson (3.x and later, sharded
// subscription mode AUTO) publishes with SPUBLISH and its waiters
// SSUBSCRIBE: rlock's release then publishes both ways, and rlock's
// waiters listen both ways (pubsub/PublishSubscribeService.java,
// getPublishCommand()). No --fair queue, no
// --once-per, no semaphore: those steps throw Error (bad_input). The fence
// comes from a counter of rlock's own beside the key, PREFIX{NAME}:fence
// (INCR on each take by rlock), as --compat string keeps it; Redisson's
// holders do not take from it.
class RedissonStore final : public ForwardingStore {
public:
  // `deployment` is one server or a Sentinel master; a `cluster_node` is
  // one master of a Cluster (ClusterStore routes to it).
  explicit RedissonStore(const Deployment& deployment,
                         bool cluster_node = false);

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

  // Redisson's unlock channel for lock `name` (RedissonObject.prefixName):
  // "redisson_lock__channel:" + NAME when NAME has a '{', else
  // "redisson_lock__channel:{NAME}".
  static std::string channel_of(std::string_view name);

  // rlock's field in Redisson's hash for `token`, "<token>:1".
  static std::string field_of(const std::string& token);

  // Returns the store on the server whose session the steps use
  // (ClusterStore sends ASKING and fixes the replicas through it).
  RedisStore& redis() const;

protected:
  LockStore& inner() const override;

  // rlock's fence counter beside lock `name`, in its Cluster slot.
  std::string fence_key_of(std::string_view name) const;

private:
  RedissonStore(const Deployment& deployment,
                bool cluster_node,
                std::unique_ptr<RedisStore> inner);

  // The script argument that says whether a release also SPUBLISHes.
  std::string sharded_argument() const;

  Deployment m_deployment;
  bool m_cluster_node = false;
  std::unique_ptr<RedisStore> m_inner;
};

} // namespace rlock::lock

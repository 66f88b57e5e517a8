#pragma once

#include <rlock/lock/deployment.hpp>
#include <rlock/lock/store.hpp>

#include <memory>

namespace rlock::lock {

// The store of a plain redis:// URL: one server, until that server turns
// out to be a Redis Cluster node (it answers MOVED, or CROSSSLOT for a
// name with braces; status and doctor ask INFO cluster); from then on the
// cluster, with the URL's node as its seed. A managed Redis in cluster mode
// hands out one such URL (a configuration endpoint). MOVED and CROSSSLOT
// say the command did not run: the step runs again on the cluster.
class DiscoveringStore final : public LockStore {
public:
  explicit DiscoveringStore(Deployment deployment);

  std::unique_ptr<LockStore> another() const override;
  std::string key_of(std::string_view name) const override;
  AcquireAttempt acquire(const LockRequest& request,
                         const WaiterEntry& entry) override;
  AcquireAttempt peek(std::string_view name) override;
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
  DiscoveringStore(Deployment deployment,
                   std::unique_ptr<LockStore> store,
                   bool cluster);

  // Runs `step` on the store of now; on the single server's MOVED or
  // CROSSSLOT, switches to the cluster and runs it there.
  template <typename Step>
  auto on_store(Step&& step);
  // Switches to the cluster when the server says it is a cluster node
  // (asked once): for the steps that read every master.
  void look_for_cluster();
  void switch_to_cluster();

  Deployment m_deployment;
  std::unique_ptr<LockStore> m_store; // a RedisStore, then a ClusterStore
  bool m_cluster = false;
  bool m_looked = false;
  std::optional<BootTime> m_deadline;
};

} // namespace rlock::lock

#pragma once

#include <rlock/lock/deployment.hpp>
#include <rlock/store/forwarding_store.hpp>
#include <rlock/store/style_stores.hpp>

#include <memory>
#include <optional>

namespace rlock::lock {

// Returns whether a server runs in cluster mode, from its replies to
// INFO cluster and CLUSTER INFO (sent together, so that either may be
// refused): INFO's cluster_enabled field when it has one, else CLUSTER INFO
// answering (a cluster node) or saying "cluster support disabled" (not
// one). Nothing when neither reply tells.
std::optional<bool> cluster_mode_of(const redis::Reply& info,
                                    const redis::Reply& cluster_info);

// The store of a plain redis:// URL, in the deployment's lock style
// (--compat): one server, until that server turns out to be a Redis
// Cluster node; from then on the cluster, with the URL's node as its seed.
// A managed Redis in cluster mode hands out one such URL (a configuration
// endpoint). For a NAME or prefix without braces (and for an application's
// lock always) both key layouts are the same, and the server's MOVED (or
// CROSSSLOT) answer says it is a cluster node: the command did not run,
// and the step runs again on the cluster. For rlock's own lock with a
// brace in its NAME or prefix the layouts differ, so the server is asked
// whether it is a cluster node (INFO cluster and CLUSTER INFO, one round
// trip) before the first step; status and doctor always ask.
class DiscoveringStore final : public ForwardingStore {
public:
  explicit DiscoveringStore(Deployment deployment);

  std::unique_ptr<LockStore> another() const override;
  void release_quietly(std::string_view name,
                       const std::string& token) noexcept override;
  std::unique_ptr<Wakeups> watch(std::string_view name,
                                 const std::string& token) override;
  std::unique_ptr<Wakeups> watch_releases(std::string_view name) override;
  StatusSnapshot read_locks(const std::vector<std::string>& names) override;
  StatusSnapshot list_locks(std::string_view match) override;
  std::vector<ServerFacts> examine() override;
  std::optional<DeploymentState> deployment_state() override;
  void set_deadline(std::optional<BootTime> deadline) override;

protected:
  LockStore& inner() const override;
  // Runs `step` for lock `name` on the store of now, once the key layout
  // of `name` is known; on the single server's MOVED or CROSSSLOT, switches
  // to the cluster and runs it there.
  void on_store(std::string_view name,
                const std::function<void(LockStore&)>& step) override;

private:
  DiscoveringStore(Deployment deployment, StyleStores single);

  // True when the keys of lock `name` differ on a cluster node.
  bool layout_depends_on_mode(std::string_view name) const;

  // Asks the server whether it is a cluster node, unless it was asked
  // already or `name` has the same keys either way.
  void settle_layout(std::string_view name);
  // Asks the server whether it is a cluster node (once it has answered,
  // never again) and switches to the cluster when it is. When it will not
  // say: throws Error (unavailable) if `must_know`, else stays on the one
  // server.
  void look_for_cluster(bool must_know);
  // Throws Error (bad_input) when the prefix holds a brace.
  void switch_to_cluster();

  Deployment m_deployment;
  // The style's store on the one server (style_stores()), then a
  // ClusterStore; while on the one server, the RedisStore under it.
  std::unique_ptr<LockStore> m_store;
  RedisStore* m_single = nullptr;
  bool m_cluster = false;
  bool m_looked = false; // the server said whether it is a cluster node
  std::optional<BootTime> m_deadline;
};

} // namespace rlock::lock
